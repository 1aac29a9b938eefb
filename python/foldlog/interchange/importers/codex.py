"""Codex CLI rollout JSONL → foldlog events.

The model-visible history is the ``response_item`` records; ``event_msg`` mostly repeats it for
the UI and is used only for turn boundaries (``task_started`` / ``task_complete``) and usage
(``token_count``: its ``last_token_usage`` is the model call that just ended; consecutive
duplicates are dropped). Consecutive assistant-side items (reasoning, assistant text, function
calls) are one model reply. ``compacted`` replaces the history with ``replacement_history``: we
record it as a foldlog compaction whose digest renders that replacement history.
Web searches run on the server and have no output item, so they are noted in the reply text
instead of becoming tool calls that would stay unanswered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder, media_blocks
from foldlog.interchange.source import expect, iso_ms, iter_jsonl, need_dict
from foldlog.log.text import display_text

FORMAT = "codex"


@dataclass(slots=True)
class _Reply:
    line: int
    time: int | None
    texts: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[tuple[str | None, str, str]] = field(default_factory=list)


def usage_from_codex(info: Any) -> dict[str, int] | None:
    last = info.get("last_token_usage") if isinstance(info, dict) else None
    if not isinstance(last, dict):
        return None
    prompt = int(last.get("input_tokens") or 0)
    cached = int(last.get("cached_input_tokens") or 0)
    return {
        "promptTokens": prompt,
        "completionTokens": int(last.get("output_tokens") or 0),
        "cacheHitTokens": cached,
        "cacheMissTokens": max(prompt - cached, 0),
        "reasoningTokens": int(last.get("reasoning_output_tokens") or 0),
    }


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = [display_text(x.get("text")) for x in item.get("summary") or [] if isinstance(x, dict)]
    for x in item.get("content") or []:
        if isinstance(x, dict) and isinstance(x.get("text"), str):
            parts.append(x["text"])
    return "\n".join(p for p in parts if p)


def _render_history(items: list[Any]) -> str:
    """The replacement history as one text, role by role (what the model sees after the fold)."""
    lines: list[str] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            lines.append(f"[{item.get('role', '?')}] {display_text(item.get('content'))}")
        elif item.get("type") == "compaction":
            lines.append("[compaction summary: encrypted by the provider]")
    return "\n\n".join(lines)


#: the envelope of a response item (what is left is a call's arguments)
_ENVELOPE = frozenset({"type", "id", "call_id", "status", "name"})
#: response items that are not model history the log can hold: the provider's encrypted
#: ``compaction`` item stands for a summary only the provider can read (rendered in a fold)
_NOT_HISTORY_ITEMS = frozenset({"ghost_snapshot", "compaction", "compaction_summary"})


class _Converter:
    def __init__(self, path: str | Path) -> None:
        self.path = path
        self.b = EventBuilder()
        self.reply: _Reply | None = None
        self.last_reply_seq: int | None = None
        self.last_reply_has_usage = True
        self.last_total: Any = None
        self.meta: dict[str, Any] = {"format": FORMAT, "source": Path(path).name}
        self.id: str | None = None
        self.time: int | None = None  # of the record being read
        self.task_open = False

    def flush(self, usage: dict[str, int] | None = None) -> None:
        reply, self.reply = self.reply, None
        if reply is None:
            return
        self.b.line, self.b.time = reply.line, reply.time
        self.last_reply_seq = self.b.assistant(
            "\n\n".join(reply.texts),
            reasoning="\n\n".join(reply.reasoning) or None,
            tool_calls=reply.calls,
            usage=usage,
        )
        self.last_reply_has_usage = usage is not None

    def open_reply(self, line: int) -> _Reply:
        if self.reply is None:
            self.reply = _Reply(line, self.time)
        return self.reply

    def event(self, number: int, payload: dict[str, Any]) -> None:
        kind = payload.get("type")
        if kind in ("task_started", "task_complete", "turn_aborted"):
            self.flush()
            self.b.line, self.b.time = number, self.time
            # a task started while the one before never completed was cut short
            aborted = kind == "turn_aborted" or (kind == "task_started" and self.task_open)
            self.b.end_turn("aborted" if aborted else "completed")
            self.task_open = kind == "task_started"
        elif kind == "token_count":
            info = payload.get("info")
            total = info.get("total_token_usage") if isinstance(info, dict) else None
            if total is None or total == self.last_total:
                return  # no data yet, or the same call reported twice
            self.last_total = total
            usage = usage_from_codex(info)
            if self.reply is not None:
                self.flush(usage)
            elif usage and self.last_reply_seq is not None and not self.last_reply_has_usage:
                self.b.set_usage(self.last_reply_seq, usage)
                self.last_reply_has_usage = True

    def item(self, number: int, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            text = display_text(item.get("content"))
            if role == "assistant":
                self.open_reply(number).texts.append(text)
                return
            self.flush()
            self.b.line, self.b.time = number, self.time
            if role in ("developer", "system"):
                self.b.system(text)
            else:
                expect(role == "user", f"message with unknown role {role!r}", self.path, number)
                media = media_blocks(item.get("content"), self.b.warn)  # input_image → image_url
                self.b.user(media if media is not None else text)
        elif kind == "reasoning":
            text = _reasoning_text(item)
            reply = self.open_reply(number)
            if text:
                reply.reasoning.append(text)
        elif kind in ("function_call", "custom_tool_call"):
            expect(isinstance(item.get("name"), str), f"{kind} without a name", self.path, number)
            if kind == "function_call":
                args = item.get("arguments")
                args = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            else:  # a freeform tool (apply_patch): wrap the raw input so arguments stay JSON
                args = json.dumps({"input": item.get("input", "")}, ensure_ascii=False)
            self.open_reply(number).calls.append((item.get("call_id"), item["name"], args))
        elif kind == "web_search_call":
            action = item.get("action") or {}
            query = action.get("query") if isinstance(action, dict) else None
            self.open_reply(number).texts.append(f"[web search: {query}]" if query else "[web search]")
        elif kind == "local_shell_call":  # the older shell tool: its output is a function_call_output
            action = item.get("action")
            args = json.dumps(action if isinstance(action, dict) else {}, ensure_ascii=False)
            self.open_reply(number).calls.append((item.get("call_id"), "local_shell", args))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            self.flush()
            self.b.line, self.b.time = number, self.time
            output = item.get("output")
            media = media_blocks(output, self.b.warn)  # e.g. view_image: input_text + input_image
            if media is not None:
                content: Any = media
            else:
                content = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            self.b.tool_result(item.get("call_id"), content)
        elif isinstance(kind, str) and kind.endswith("_call_output") and isinstance(item.get("call_id"), str):
            self.flush()  # a newer tool's output: the result of the call it names (kept below)
            if not self.b.has_pending(item["call_id"]):
                self.b.leave_out(f"{kind!r} item(s): the output of a call this transcript does not hold")
                return
            self.b.line, self.b.time = number, self.time
            output = item.get("output", {k: v for k, v in item.items() if k not in _ENVELOPE})
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            self.b.tool_result(item["call_id"], text)
        elif isinstance(kind, str) and kind.endswith("_call") and isinstance(item.get("call_id"), str):
            # a newer kind of call (formats grow them): kept as a call with what it holds
            args = json.dumps({k: v for k, v in item.items() if k not in _ENVELOPE}, ensure_ascii=False)
            self.open_reply(number).calls.append((item["call_id"], str(item.get("name") or kind), args))
        elif kind not in _NOT_HISTORY_ITEMS:
            self.b.leave_out(f"{kind!r} item(s): a kind of response item this importer does not know")

    def run(self) -> list[Conversation]:
        for number, rec in iter_jsonl(self.path, "Codex rollouts"):
            kind = rec.get("type")
            expect(isinstance(kind, str), 'record without a "type"', self.path, number)
            payload = need_dict(rec.get("payload"), 'record without a "payload" object', self.path, number)
            self.time = iso_ms(rec.get("timestamp"))
            self.b.time = self.time
            if kind == "session_meta":
                self.id = payload.get("id") or self.id
                for key in ("cwd", "originator", "cli_version", "model_provider"):
                    if key in payload:
                        self.meta[key] = payload[key]
                instructions = payload.get("base_instructions")
                if isinstance(instructions, dict) and isinstance(instructions.get("text"), str):
                    self.b.line, self.b.time = number, self.time
                    self.b.system(instructions["text"])
            elif kind == "turn_context":
                if isinstance(payload.get("model"), str):
                    self.meta.setdefault("model", payload["model"])
            elif kind == "event_msg":
                self.event(number, payload)
            elif kind == "response_item":
                self.item(number, payload)
            elif kind == "compacted":
                self.flush()
                self.b.line, self.b.time = number, self.time
                history = payload.get("replacement_history")
                message = payload.get("message")
                summary = _render_history(history) if isinstance(history, list) else ""
                if isinstance(message, str) and message.strip() and not summary:
                    summary = message
                self.b.compaction(summary, trigger="auto", source=FORMAT)
            else:
                self.b.leave_out(f"{kind!r} record(s): a kind of record this importer does not know")
        self.flush()
        return [self.b.conversation(id=self.id, meta=self.meta)]


def convert(path: str | Path) -> list[Conversation]:
    return _Converter(path).run()
