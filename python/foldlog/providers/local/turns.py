"""What the conversation says about the local model's next reply (:mod:`foldlog.providers.local.provider`):
a question just asked, an error just returned, a call already made."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from foldlog.providers.local.gemma_chat import is_note, text_of


def asks_now(messages: Sequence[Mapping[str, Any]]) -> bool:
    """The last message is a question (not a tool result, not one of the agent's notes)."""
    last = messages[-1] if messages else {}
    return last.get("role") == "user" and not is_note(text_of(last.get("content")))


def failed_last(messages: Sequence[Mapping[str, Any]]) -> bool:
    """The last message is a tool result that reports an error (``error: …``)."""
    last = messages[-1] if messages else {}
    return last.get("role") == "tool" and text_of(last.get("content")).startswith("error:")


def already_called(messages: Sequence[Mapping[str, Any]], name: str, arguments: str) -> bool:
    """Whether this exact call was made since the last user message that was not a note."""
    want = canonical(arguments)
    for m in reversed(messages):
        if m.get("role") == "user" and not is_note(text_of(m.get("content"))):
            return False
        for c in m.get("tool_calls") or () if m.get("role") == "assistant" else ():
            fn = c.get("function") or {}
            if fn.get("name") == name and canonical(str(fn.get("arguments") or "")) == want:
                return True
    return False


def canonical(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True)
    except ValueError:
        return arguments.strip()
