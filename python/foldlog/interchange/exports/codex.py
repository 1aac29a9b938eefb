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

Not carried (each named in the warnings): tool results' error flag (Codex has none on outputs),
audio, file and document blocks (written as their names in text, `export_blocks`), a context
reset; also content lists of text only (Codex message parts are read back as one text), end
reasons other than completed / aborted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foldlog.interchange.exports.blocks import Uncarried, block_url, where
from foldlog.interchange.exports.claude_code import iso_time
from foldlog.interchange.exports.walk import Compaction, Reply, Reset, Result, System, TurnEnd, User, history
from foldlog.log.text import display_text

if TYPE_CHECKING:
    from foldlog.log.session import Session

FORMAT = "codex"


#: the blocks Codex has no part for (its messages hold text and images)
_NOT_CARRIED = frozenset({"input_audio", "file", "document"})


def _parts(content: Any, text_type: str, at: str, notes: Uncarried) -> list[dict[str, Any]]:
    """Content as Codex message parts: text parts and images (``input_image`` with a URL); a
    block Codex cannot carry becomes its name in text, warned in ``notes``."""
    if not isinstance(content, list):
        return [{"type": text_type, "text": display_text(content)}]
    parts: list[dict[str, Any]] = []
    for index, block in enumerate(content):
        url = block_url(block) if isinstance(block, Mapping) else None
        if url is not None:
            parts.append({"type": "input_image", "image_url": url})
        elif isinstance(block, Mapping) and block.get("type") in _NOT_CARRIED:
            text = notes.text_for(
                at, index, block, f"Codex has no {block.get('type')} part (text and images only)"
            )
            parts.append({"type": text_type, "text": text["text"]})
        else:
            parts.append({"type": text_type, "text": display_text([block])})
    return parts


def _text_only(content: Any, at: str, notes: Uncarried, why: str | None = None) -> str:
    """Content as one text (a reply, the base instructions, a tool output without images):
    media blocks become their names, each warned in ``notes`` (``why``: by default, that Codex
    has no part for the block)."""
    if not isinstance(content, list):
        return display_text(content)
    pieces = [
        notes.text_for(at, i, b, why or f"Codex has no {b.get('type')} part (text and images only)")["text"]
        if isinstance(b, Mapping) and (block_url(b) is not None or b.get("type") in _NOT_CARRIED)
        else display_text([b])
        for i, b in enumerate(content)
    ]
    return "\n".join(p for p in pieces if p)


def _has_media(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in ("image_url", "image") for b in content
    )


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.notes = Uncarried("Codex")
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
        text = _text_only(r.content, where(r), self.notes, "a Codex reply holds text only")
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
        first = records[0]
        why = "Codex base instructions hold text only"
        meta["base_instructions"] = {"text": _text_only(first.content, where(first), w.notes, why)}
        records = records[1:]
    w.put(first_time, "session_meta", meta)
    errors = 0
    for rec in records:
        if isinstance(rec, System):
            parts = _parts(rec.content, "input_text", where(rec), w.notes)
            w.item(rec.time, {"type": "message", "role": "developer", "content": parts})
        elif isinstance(rec, User):
            parts = _parts(rec.content, "input_text", where(rec), w.notes)
            w.item(rec.time, {"type": "message", "role": "user", "content": parts})
        elif isinstance(rec, Reply):
            w.reply(rec)
        elif isinstance(rec, Result):
            errors += rec.is_error
            output: Any = (
                _parts(rec.content, "input_text", where(rec), w.notes)
                if _has_media(rec.content)
                else _text_only(rec.content, where(rec), w.notes)
            )
            w.item(rec.time, {"type": "function_call_output", "call_id": rec.call_id, "output": output})
        elif isinstance(rec, Compaction):
            w.put(rec.time, "compacted", {"message": rec.summary})
        elif isinstance(rec, Reset):
            warnings.append(rec.note())
        elif isinstance(rec, TurnEnd):
            if w.in_turn:
                kind = "task_complete" if rec.reason == "completed" else "turn_aborted"
                w.put(rec.time, "event_msg", {"type": kind})
                w.in_turn = False
    if errors:
        warnings.append(f"{errors} tool result(s) marked as errors: Codex outputs carry no error flag")
    warnings += w.notes.warnings
    return "\n".join(w.lines) + "\n", warnings
