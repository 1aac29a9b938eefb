"""Tracing from a stored log: `export_session` feeds a log's events to the same `SpanBuilder`
the live path uses, so the spans and their times are those of the run. A sub-agent's log (named
by its ``task`` result's ``meta.subagent.session``) is read from the same folder, when it is
there, and nested under that call."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigTypeError
from foldlog.telemetry.spans import SpanBuilder, tracer_of


def _load(session_or_path: Any) -> tuple[Any, Path | None]:
    """The session, and the folder its sub-agents' logs would be in."""
    from foldlog.log.session import Session

    if isinstance(session_or_path, Session):
        path = session_or_path.path
        return session_or_path, Path(path).parent if path else None
    if isinstance(session_or_path, (str, os.PathLike)):
        return Session.load(session_or_path), Path(session_or_path).parent
    raise ConfigTypeError(f"export_session takes a Session or a path, not {type(session_or_path).__name__}")


def _child_id(event: Mapping[str, Any]) -> str | None:
    if event.get("type") != "tool/result":
        return None
    data = event.get("data")
    meta = data.get("meta") if isinstance(data, Mapping) else None
    sub = meta.get("subagent") if isinstance(meta, Mapping) else None
    child = sub.get("session") if isinstance(sub, Mapping) else None
    return child if isinstance(child, str) and child else None


def _call_id(event: Mapping[str, Any]) -> str | None:
    data = event.get("data")
    message = data.get("message") if isinstance(data, Mapping) else None
    cid = message.get("toolCallId") if isinstance(message, Mapping) else None
    return cid if isinstance(cid, str) else None


def _replay(
    session: Any,
    tracer: Any,
    *,
    provider_name: str | None,
    capture_content: bool,
    agent_name: str | None,
    parent_span: Any,
    parent_session: str | None,
    folder: Path | None,
    seen: set[str],
) -> int:
    seen.add(session.id)
    builder = SpanBuilder(
        tracer,
        session_id=session.id,
        provider_name=provider_name,
        agent_name=agent_name,
        capture_content=capture_content,
        parent=parent_span,
        parent_session=parent_session,
    )
    children = 0
    for ev in session.events:
        child = _child_id(ev)
        if child is not None and folder is not None and child not in seen:
            path = folder / f"{child}.jsonl"
            call_id = _call_id(ev)
            if path.is_file() and call_id is not None:
                from foldlog.log.session import Session

                children += 1 + _replay(
                    Session.load(path),
                    tracer,
                    provider_name=provider_name,
                    capture_content=capture_content,
                    agent_name=agent_name,
                    parent_span=builder.tool_spans.get(call_id),
                    parent_session=session.id,
                    folder=folder,
                    seen=seen,
                )
        builder.feed(ev)
    builder.finish()
    return children


def export_session(
    session_or_path: Any,
    tracer_provider: Any = None,
    *,
    provider_name: str | None = None,
    capture_content: bool = False,
    agent_name: str | None = None,
) -> int:
    """Make the spans of a stored session (a `Session` or a log's path), and of its sub-agents'
    logs found beside it, in ``tracer_provider`` (default: the global one). ``provider_name``:
    ``gen_ai.provider.name`` (the log does not record it). Returns the number of sub-agent logs
    read. The caller flushes its exporter (``tracer_provider.force_flush()``)."""
    session, folder = _load(session_or_path)
    return _replay(
        session,
        tracer_of(tracer_provider),
        provider_name=provider_name,
        capture_content=capture_content,
        agent_name=agent_name,
        parent_span=None,
        parent_session=None,
        folder=folder,
        seen=set(),
    )


__all__ = ["export_session"]
