"""The Anthropic Messages API request body, made from a session's wire messages.

The messages a request carries are the core's (``Session.wire_messages()``: results paired to
their calls, named, missing ones filled, content blocks mapped for chat completions). This module
is the one place they are turned into the Messages API's shape (``docs/providers.md``,
"Anthropic"), and :func:`place_breakpoints` the one place the cache breakpoints are chosen; the
bytes are written by the core's encoder like every other request body (``_core.encode_json``).

Why not a wire style of the core: a style writes each message on its own, once, and joins the
cached pieces. The Messages API body is not a per-message image of the chat messages — leading
system messages leave the list for ``system``, consecutive tool results become one user message,
messages of one role in a row merge — and its cache breakpoints depend on where a message stands
in the request (the last user turns), so a per-message cache could not hold it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from foldlog.errors import ConfigError
from foldlog.providers.http.openai_compat import normalize_tools

#: the API's limit on ``cache_control`` breakpoints in one request
MAX_BREAKPOINTS = 4
#: breakpoints on the last user turns: the newest (written now) and the one before it (written by
#: the previous request, read now, whatever was appended since)
USER_BREAKPOINTS = 2

Block = dict[str, Any]
Message = dict[str, Any]


def tools_for_messages(tools: Sequence[Mapping[str, Any]]) -> list[Block]:
    """Tool schemas as the Messages API takes them (``name``, ``description``,
    ``input_schema``), sorted by name like every provider's (a stable prefix)."""
    out: list[Block] = []
    for tool in normalize_tools(tools):
        fn = tool["function"]
        schema = fn.get("parameters") or fn.get("input_schema") or {"type": "object", "properties": {}}
        entry: Block = {"name": fn["name"], "input_schema": dict(schema)}
        if fn.get("description"):
            entry["description"] = fn["description"]
        out.append(entry)
    return out


def _data_url(url: str) -> tuple[str, str] | None:
    """``(media_type, base64 data)`` of a ``data:…;base64,…`` URL."""
    if not url.startswith("data:"):
        return None
    head, sep, data = url[5:].partition(",")
    if not sep or not head.endswith(";base64"):
        return None
    return head[: -len(";base64")], data


def content_block(block: Mapping[str, Any]) -> Block:
    """One content block for the Messages API. The core mapped the importers' ``image`` /
    ``document`` blocks to chat completions' ``image_url`` / ``file``; they go back to
    ``image`` / ``document`` here (a data URL as a ``base64`` source, a link as a ``url`` one).
    Anything else is sent as it is (the provider's content check refused what it cannot take)."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": str(block.get("text") or "")}
    if kind == "image_url":
        image = block.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else None
        if isinstance(url, str):
            parsed = _data_url(url)
            if parsed is not None:
                return {
                    "type": "image",
                    "source": {"type": "base64", "media_type": parsed[0], "data": parsed[1]},
                }
            return {"type": "image", "source": {"type": "url", "url": url}}
    if kind == "file":
        f = block.get("file")
        if isinstance(f, Mapping):
            data = f.get("file_data")
            parsed = _data_url(data) if isinstance(data, str) else None
            doc: Block | None = None
            if parsed is not None:
                doc = {
                    "type": "document",
                    "source": {"type": "base64", "media_type": parsed[0], "data": parsed[1]},
                }
            elif isinstance(f.get("file_id"), str):
                doc = {"type": "document", "source": {"type": "file", "file_id": f["file_id"]}}
            if doc is not None:
                if isinstance(f.get("filename"), str) and f["filename"]:
                    doc["title"] = f["filename"]
                return doc
    return _plain_block(block)


def _plain_block(block: Mapping[str, Any]) -> Block:
    """A frozen mapping from the session as a plain dict (deeply)."""
    return {str(k): _plain(v) for k, v in block.items()}


def _plain(value: Any) -> Any:
    """A frozen mapping/sequence from the session as plain dicts and lists."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _blocks(content: Any) -> list[Block]:
    """A message's content as blocks (a string is one text block; empty text is left out: the
    API refuses empty text blocks)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, Sequence):
        out = [content_block(b) for b in content if isinstance(b, Mapping)]
        return [b for b in out if not (b.get("type") == "text" and not b.get("text"))]
    return []


def _input(arguments: Any) -> Any:
    """A call's arguments as the ``input`` object ``tool_use`` needs: the model's JSON text
    parsed; text that is not a JSON object (a cut call the repair could not close) is kept
    under ``arguments`` so that nothing is lost."""
    if isinstance(arguments, Mapping):
        return _plain(arguments)
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _assistant_blocks(m: Mapping[str, Any], thinking: bool) -> list[Block]:
    out: list[Block] = []
    if thinking:
        # the signed reasoning first, verbatim, as the API gave it (it checks the signature)
        for b in m.get("thinking_blocks") or ():
            if isinstance(b, Mapping):
                out.append(_plain_block(b))
    out += [b for b in _blocks(m.get("content")) if b.get("type") not in ("thinking", "redacted_thinking")]
    for call in m.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(fn, Mapping):
            continue
        out.append(
            {
                "type": "tool_use",
                "id": str(call.get("id") or ""),
                "name": str(fn.get("name") or ""),
                "input": _input(fn.get("arguments")),
            }
        )
    return out


def _tool_result(m: Mapping[str, Any]) -> Block:
    out: Block = {"type": "tool_result", "tool_use_id": str(m.get("tool_call_id") or "")}
    content = m.get("content")
    if isinstance(content, str):
        if content:
            out["content"] = content
    else:
        blocks = _blocks(content)
        if blocks:
            out["content"] = blocks
    if m.get("is_error") is True:
        out["is_error"] = True
    return out


def split_messages(
    messages: Sequence[Mapping[str, Any]], *, thinking: bool
) -> tuple[list[Block], list[Message]]:
    """``(system blocks, messages)`` of the Messages API for chat-shaped ``messages``.

    Leading system messages become the ``system`` blocks; a system message later in the history
    (rare: a hand-built one) is sent as user text, where it stands. Tool results become
    ``tool_result`` blocks of a user message, and messages of one role in a row are merged into
    one (the results of a step, then any user message after them). ``thinking``: send the
    assistant turns' signed reasoning back (the API needs it in a tool loop with thinking on).
    """
    system: list[Block] = []
    out: list[Message] = []
    leading = True
    for m in messages:
        role = m.get("role")
        if role == "system" and leading:
            system += _blocks(m.get("content"))
            continue
        leading = False
        if role == "assistant":
            blocks, want = _assistant_blocks(m, thinking), "assistant"
        elif role == "tool":
            blocks, want = [_tool_result(m)], "user"
        else:
            blocks, want = _blocks(m.get("content")), "user"
            if role == "system":
                blocks = [
                    {"type": "text", "text": f"<system>\n{b.get('text', '')}\n</system>"} for b in blocks
                ]
        if not blocks:
            continue
        if out and out[-1]["role"] == want:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": want, "content": blocks})
    return system, out


def place_breakpoints(
    tools: list[Block], system: list[Block], messages: list[Message], marker: Mapping[str, Any]
) -> int:
    """Put ``cache_control`` (``marker``) on the last tool, the last system block and the last
    block of the last :data:`USER_BREAKPOINTS` user messages — at most :data:`MAX_BREAKPOINTS`.

    The log is append-only, so the prefix up to each breakpoint is the same bytes in the next
    request: the newest user turn's breakpoint writes the cache, the next request reads it at the
    same place (then its second-to-last user turn). After a fold the history is a new prefix and
    the breakpoints move with it. Returns how many were placed."""
    placed = 0
    if tools:
        tools[-1]["cache_control"] = dict(marker)
        placed += 1
    if system:
        system[-1]["cache_control"] = dict(marker)
        placed += 1
    users = [m for m in messages if m["role"] == "user"]
    for m in reversed(users[-min(USER_BREAKPOINTS, MAX_BREAKPOINTS - placed) :] if users else []):
        last = m["content"][-1]
        if last.get("type") in ("thinking", "redacted_thinking"):
            continue  # cannot carry a breakpoint (not in a user message anyway)
        last["cache_control"] = dict(marker)
        placed += 1
    return placed


def thinking_param(thinking: Any, max_tokens: int) -> dict[str, Any] | None:
    """The ``thinking`` parameter for ``Anthropic(thinking=…)``: ``None``/``False`` off; ``True``
    a budget of half of ``max_tokens`` (at least the API's 1024); an int, that budget; a mapping,
    sent as it is (``{"type":"adaptive"}``, ``display``…)."""
    if thinking is None or thinking is False:
        return None
    if thinking is True:
        budget = max(1024, max_tokens // 2)
    elif isinstance(thinking, int):
        budget = thinking
    elif isinstance(thinking, Mapping):
        return _plain_block(thinking)
    else:
        raise ConfigError(f"thinking must be None, a bool, a token budget or a mapping, got {thinking!r}")
    if budget < 1024:
        raise ConfigError(f"the thinking budget must be at least 1024 tokens, got {budget}")
    if budget >= max_tokens:
        raise ConfigError(f"the thinking budget ({budget}) must be below max_tokens ({max_tokens})")
    return {"type": "enabled", "budget_tokens": budget}


__all__ = [
    "MAX_BREAKPOINTS",
    "USER_BREAKPOINTS",
    "content_block",
    "place_breakpoints",
    "split_messages",
    "thinking_param",
    "tools_for_messages",
]
