"""The seed's version-0 session log (the DeepSeek harness example, no header) → foldlog events.

Version 0 keeps tool calls as ``tool_use`` blocks inside the assistant content and may leave
``toolCallId`` off a ``tool/result`` (then it answers the oldest open call). We rebuild the
version-1 shapes: text content plus OpenAI ``tool_calls``, results carrying ``toolCallId``.
Raw ``assistant/chunk`` stream deltas are replay data and are not carried over.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder
from foldlog.interchange.source import expect, iter_jsonl
from foldlog.log.grammar import kinds
from foldlog.log.text import display_text

FORMAT = "dsh"

#: version 0 spells its kinds as version 1 does; these carry nothing the conversion keeps
_STRUCTURE = {
    kinds.TURN_START,
    kinds.STEP_START,
    kinds.STEP_END,
    kinds.TOOL_CALL,
    kinds.ASSISTANT_CHUNK,
    kinds.REQUEST_HEADER,
}
_USAGE_KEYS = {
    "inputTokens": "promptTokens",
    "outputTokens": "completionTokens",
    "cacheReadTokens": "cacheHitTokens",
    "reasoningTokens": "reasoningTokens",
}


def _usage(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, Mapping):
        return None
    return {_USAGE_KEYS.get(str(k), str(k)): v for k, v in raw.items()}


def _assistant(b: EventBuilder, data: Mapping[str, Any], path: str | Path, line: int) -> None:
    message = data.get("message")
    expect(isinstance(message, Mapping), f"{kinds.ASSISTANT_MESSAGE} without a message object", path, line)
    assert isinstance(message, Mapping)
    content = message.get("content")
    calls: list[tuple[str | None, str, str]] = []
    texts: list[str] = []
    thinking: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "tool_use":
                calls.append(
                    (block.get("id"), str(block.get("name") or ""), json.dumps(block.get("input", {})))
                )
            elif isinstance(block, Mapping) and block.get("type") in ("thinking", "reasoning"):
                text = block.get("thinking", block.get("text"))
                if isinstance(text, str) and text:
                    thinking.append(text)  # the reply's reasoning, not its text
            else:
                texts.append(display_text([block]))
    else:
        texts.append(display_text(content))
    for call in message.get("tool_calls") or []:
        fn = call.get("function", {}) if isinstance(call, Mapping) else {}
        calls.append((call.get("id"), str(fn.get("name") or ""), str(fn.get("arguments") or "")))
    extra = {"interrupted": True} if data.get("interrupted") else None
    b.assistant(
        "".join(texts),
        reasoning=message.get("reasoning_content") or "\n\n".join(thinking) or None,
        tool_calls=calls,
        usage=_usage(data.get("usage")),
        extra=extra,
    )


def convert(path: str | Path) -> list[Conversation]:
    b = EventBuilder()
    for number, rec in iter_jsonl(path, "dsh logs"):
        b.line = number
        b.time = rec["time"] if isinstance(rec.get("time"), int) else b.time
        kind = rec.get("type")
        data = rec.get("data")
        expect(isinstance(kind, str), 'event without a "type"', path, number)
        if kind == "session":
            expect(False, "this log has a header: it is already a version-1 foldlog log", path, number)
        expect(isinstance(data, Mapping), f'{kind} event without a "data" object', path, number)
        assert isinstance(data, Mapping)
        if kind in _STRUCTURE:
            continue
        if kind == kinds.USER_MESSAGE:
            b.user(data.get("content", ""), source=data.get("source"))
        elif kind == kinds.SYSTEM_MESSAGE:
            b.system(data.get("content", ""))
        elif kind == kinds.ASSISTANT_MESSAGE:
            _assistant(b, data, path, number)
        elif kind == kinds.TOOL_RESULT:
            msg = data.get("message")
            expect(isinstance(msg, Mapping), f"{kinds.TOOL_RESULT} without a message object", path, number)
            assert isinstance(msg, Mapping)
            b.tool_result(
                msg.get("toolCallId"),
                b.content(msg.get("content")),
                name=msg.get("toolName"),
                is_error=bool(msg.get("isError") or data.get("error")),
            )
        elif kind == kinds.TURN_END:
            reason = data.get("reason")
            b.end_turn(str(reason.get("kind", "completed")) if isinstance(reason, Mapping) else "completed")
        else:
            expect(False, f"unknown event type {kind!r} in a version-0 log", path, number)
    return [b.conversation(id=Path(path).stem, meta={"format": FORMAT, "source": Path(path).name})]
