"""foldlog session → Codex CLI rollout JSONL (``~/.codex/sessions/…/rollout-*.jsonl``).

Records, each with the event's time as ``timestamp``:

- ``session_meta`` first (the session id; the first system message as ``base_instructions``);
- each turn opens with ``event_msg`` ``task_started`` and ends with ``task_complete`` (or
  ``turn_aborted`` when foldlog recorded another end reason);
- system messages after the first → ``response_item`` ``message`` with role ``developer``;
  user messages → role ``user`` with ``input_text`` / ``input_image`` parts;
- a reply → its ``reasoning`` item (the reasoning text as one summary part), its ``message``
  (``output_text``) and one ``function_call`` per tool call (arguments as the raw text), then an
  ``event_msg`` ``token_count`` with its usage (``last_token_usage``; ``total_token_usage``
  summed so far);
- a tool result → ``function_call_output`` (text, or ``input_text`` / ``input_image`` parts);
- a compaction → ``compacted`` with the summary as its ``message``.

Not carried: tool results' error flag (Codex has none on outputs), content lists of text only
(Codex message parts are read back as one text), end reasons other than completed / aborted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foldlog.interchange.export_claude_code import iso_time
from foldlog.interchange.export_walk import Compaction, Reply, Result, System, TurnEnd, User, history
from foldlog.log.text import display_text

if TYPE_CHECKING:
    from foldlog.log.session import Session

FORMAT = "codex"


def _parts(content: Any, text_type: str) -> list[dict[str, Any]]:
    """Content as Codex message parts: text parts and images (``input_image`` with a URL)."""
    if not isinstance(content, list):
        return [{"type": text_type, "text": display_text(content)}]
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "image_url":
            url = block.get("image_url")
            url = url.get("url") if isinstance(url, Mapping) else url
            parts.append({"type": "input_image", "image_url": str(url)})
        elif isinstance(block, Mapping) and block.get("type") == "image":
            source = block.get("source") or {}
            if source.get("type") == "base64":
                url = f"data:{source.get('media_type') or 'image/png'};base64,{source.get('data') or ''}"
            else:
                url = str(source.get("url") or "")
            parts.append({"type": "input_image", "image_url": url})
        else:
            parts.append({"type": text_type, "text": display_text([block])})
    return parts


def _has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in ("image_url", "image") for b in content
    )


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.in_turn = False
        self.total = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
        self.total_reasoning = 0

    def put(self, time: int, kind: str, payload: Mapping[str, Any]) -> None:
        rec = {"timestamp": iso_time(time), "type": kind, "payload": payload}
        self.lines.append(json.dumps(rec, ensure_ascii=False))

    def item(self, time: int, payload: Mapping[str, Any]) -> None:
        if not self.in_turn:
            self.in_turn = True
            self.put(time, "event_msg", {"type": "task_started"})
        self.put(time, "response_item", payload)

    def reply(self, r: Reply) -> None:
        if r.reasoning:
            summary = [{"type": "summary_text", "text": r.reasoning}]
            self.item(r.time, {"type": "reasoning", "summary": summary, "content": None})
        text = r.content if isinstance(r.content, str) else display_text(r.content)
        if text or not r.calls:
            content = [{"type": "output_text", "text": text}]
            self.item(r.time, {"type": "message", "role": "assistant", "content": content})
        for call in r.calls:
            self.item(
                r.time,
                {"type": "function_call", "name": call.name, "arguments": call.arguments, "call_id": call.id},
            )
        if r.usage:
            last = {
                "input_tokens": int(r.usage.get("promptTokens") or 0),
                "cached_input_tokens": int(r.usage.get("cacheHitTokens") or 0),
                "output_tokens": int(r.usage.get("completionTokens") or 0),
            }
            reasoning = int(r.usage.get("reasoningTokens") or 0)
            for key, value in last.items():
                self.total[key] += value
            self.total_reasoning += reasoning
            info = {
                "total_token_usage": {
                    **self.total,
                    "reasoning_output_tokens": self.total_reasoning,
                    "total_tokens": self.total["input_tokens"] + self.total["output_tokens"],
                },
                "last_token_usage": {
                    **last,
                    "reasoning_output_tokens": reasoning,
                    "total_tokens": last["input_tokens"] + last["output_tokens"],
                },
            }
            self.put(r.time, "event_msg", {"type": "token_count", "info": info})


def export(session: Session) -> tuple[str, list[str]]:
    """The Codex rollout of ``session``: (its text, warnings)."""
    walk = history(session)
    w = _Writer()
    records = list(walk.records)
    warnings = list(walk.warnings)
    first_time = records[0].time if records else 0
    meta: dict[str, Any] = {"id": session.id, "timestamp": iso_time(first_time), "originator": "foldlog"}
    if records and isinstance(records[0], System):
        meta["base_instructions"] = {"text": display_text(records[0].content)}
        records = records[1:]
    w.put(first_time, "session_meta", meta)
    errors = 0
    for rec in records:
        if isinstance(rec, System):
            w.item(
                rec.time,
                {"type": "message", "role": "developer", "content": _parts(rec.content, "input_text")},
            )
        elif isinstance(rec, User):
            w.item(
                rec.time, {"type": "message", "role": "user", "content": _parts(rec.content, "input_text")}
            )
        elif isinstance(rec, Reply):
            w.reply(rec)
        elif isinstance(rec, Result):
            errors += rec.is_error
            output: Any = (
                _parts(rec.content, "input_text") if _has_media(rec.content) else display_text(rec.content)
            )
            w.item(rec.time, {"type": "function_call_output", "call_id": rec.call_id, "output": output})
        elif isinstance(rec, Compaction):
            w.put(rec.time, "compacted", {"message": rec.summary})
        elif isinstance(rec, TurnEnd):
            if w.in_turn:
                kind = "task_complete" if rec.reason == "completed" else "turn_aborted"
                w.put(rec.time, "event_msg", {"type": kind})
                w.in_turn = False
    if errors:
        warnings.append(f"{errors} tool result(s) marked as errors: Codex outputs carry no error flag")
    return "\n".join(w.lines) + "\n", warnings
