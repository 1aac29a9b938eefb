"""Gemini CLI session JSON → foldlog events.

A session file is one object ``{sessionId, projectHash, startTime, lastUpdated, messages[]}``.
``user`` messages are prompts; each ``gemini`` message is one model reply: its ``content`` the
text, its ``thoughts`` (``{subject, description}``) the reasoning, its ``tokens`` the usage and
its ``toolCalls`` the calls — each call holds its own result (``result[].functionResponse
.response``), written right after the reply as its ``tool/result``. Other message types
(``info``, ``error``, ``warning``: the CLI's notices) are not model history: they are left out
and counted in the import report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder, TranscriptError
from foldlog.interchange.source import expect, iso_ms, load_json, need_dict, need_list
from foldlog.log.text import display_text

FORMAT = "gemini"

#: the CLI's notices: not model history, left out and counted in the report
_NOTICES = frozenset({"info", "error", "warning"})


def _count(tokens: dict[str, Any], key: str, path: str | Path, index: int | None) -> int:
    """``tokens[key]`` as an int: missing or null is 0, an integral float (``12.0``) is taken;
    anything else is a `TranscriptError` naming the file, message, field and value."""
    value = tokens.get(key)
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    where = f"message {index}: " if index is not None else ""
    raise TranscriptError(
        f'{where}"tokens.{key}" is {json.dumps(value, ensure_ascii=False)[:60]}: expected a whole '
        "number of tokens (0 or more)",
        path=str(path),
    )


def usage_from_gemini(tokens: Any, path: str | Path = "", index: int | None = None) -> dict[str, int] | None:
    """Gemini token counts → foldlog usage. ``input`` includes the cached part; ``output``
    leaves out the thinking tokens, which foldlog counts inside ``completionTokens``. A count
    that is not a whole number is a `TranscriptError` naming ``path`` and message ``index``."""
    if not isinstance(tokens, dict):
        return None
    prompt = _count(tokens, "input", path, index)
    cached = _count(tokens, "cached", path, index)
    thoughts = _count(tokens, "thoughts", path, index)
    return {
        "promptTokens": prompt,
        "completionTokens": _count(tokens, "output", path, index) + thoughts,
        "cacheHitTokens": cached,
        "cacheMissTokens": max(prompt - cached, 0),
        "reasoningTokens": thoughts,
    }


def _thoughts(message: dict[str, Any]) -> str | None:
    parts = []
    for t in message.get("thoughts") or []:
        if isinstance(t, dict):
            subject, text = t.get("subject"), t.get("description")
            parts.append(f"**{subject}**\n{text}" if subject and text else str(subject or text or ""))
    return "\n\n".join(p for p in parts if p) or None


def _result(call: dict[str, Any]) -> tuple[Any, bool]:
    """The content a call's result gives the model, and whether it is an error."""
    failed = call.get("status") not in (None, "success")
    texts: list[str] = []
    for part in call.get("result") or []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            if "error" in response:
                failed = True
                texts.append(display_text(response["error"]))
            elif isinstance(response.get("output"), str):
                texts.append(response["output"])
            else:
                texts.append(json.dumps(response, ensure_ascii=False))
        elif part is not None:
            texts.append(display_text(part))
    if not texts and isinstance(call.get("resultDisplay"), str):
        texts.append(call["resultDisplay"])
    return "\n".join(texts), failed


def convert(path: str | Path) -> list[Conversation]:
    doc = need_dict(load_json(path), "a Gemini CLI session is a JSON object", path, None)
    messages = need_list(doc.get("messages"), 'a Gemini CLI session needs a "messages" list', path, None)
    b = EventBuilder()
    meta: dict[str, Any] = {"format": FORMAT, "source": Path(path).name}
    for key in ("projectHash", "startTime", "lastUpdated"):
        if isinstance(doc.get(key), str):
            meta[key] = doc[key]
    skipped: dict[str, int] = {}
    for index, message in enumerate(messages):
        message = need_dict(message, "a message is not a JSON object", path, index)
        kind = message.get("type")
        b.line, b.time = index, iso_ms(message.get("timestamp"))
        if kind == "user":
            b.user(b.content(message.get("content")))
        elif kind == "gemini":
            calls = message.get("toolCalls") or []
            expect(isinstance(calls, list), '"toolCalls" is not a list', path, index)
            model = message.get("model")
            if isinstance(model, str):
                meta.setdefault("model", model)
            b.assistant(
                display_text(message.get("content")),
                reasoning=_thoughts(message),
                tool_calls=[
                    (
                        c.get("id"),
                        str(c.get("name") or ""),
                        json.dumps(c.get("args") or {}, ensure_ascii=False),
                    )
                    for c in calls
                    if isinstance(c, dict)
                ],
                usage=usage_from_gemini(message.get("tokens"), path, index),
                extra={"model": model} if isinstance(model, str) else None,
            )
            for call in calls:
                if isinstance(call, dict):
                    b.time = iso_ms(call.get("timestamp")) or b.time
                    content, failed = _result(call)
                    b.tool_result(call.get("id"), content, name=call.get("name"), is_error=failed)
        elif kind in _NOTICES:
            skipped[str(kind)] = skipped.get(str(kind), 0) + 1
        else:  # a kind of message newer than this importer: named, never dropped silently
            b.leave_out(f"{kind!r} message(s): a kind of message this importer does not know")
    for kind, n in skipped.items():
        b.warn(f"{n} {kind!r} message(s) left out (CLI notices, not model history)")
    sid = doc.get("sessionId")
    return [b.conversation(id=sid if isinstance(sid, str) else None, meta=meta)]
