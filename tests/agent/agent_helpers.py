"""Helpers shared by the agent tests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from foldlog import Session
from foldlog.providers.base import Request


def call(name: str, args: str | dict[str, Any] = "{}", id: str | None = None) -> dict[str, Any]:
    return {"id": id or f"call_{name}", "name": name, "arguments": args}


def reply(content: str = "", *calls: dict[str, Any], **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"content": content, "usage": {"prompt_tokens": 100, "completion_tokens": 10}}
    if calls:
        out["tool_calls"] = list(calls)
    out.update(extra)
    return out


def checked(session: Session, r: Any) -> Callable[[Request], Any]:
    """A reply that first asserts the request carries exactly the session's wire messages now."""

    def fn(req: Request) -> Any:
        assert list(req.messages) == list(session.wire_messages())
        return r(req) if callable(r) and not isinstance(r, BaseException) else r

    return fn


def types(session: Session, start: int = 0) -> list[str]:
    return [e["type"] for e in session.events[start:]]


def of_type(session: Session, t: str) -> list[Mapping[str, Any]]:
    return [e for e in session.events if e["type"] == t]
