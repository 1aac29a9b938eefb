"""Tracing from a stored log: `export_session` feeds a log's events to the same `SpanBuilder`
the live path uses, so the spans and their times are those of the run. A sub-agent's log is
read from the same folder, when it is there, and nested under the call that started it: a log
whose header names this session as its parent (``{"kind": "subagent", "id", "callId"}`` — what
``run_subagent`` and the importers write), or the log a ``task`` result names
(``meta.subagent.session``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigTypeError
from foldlog.log.grammar.reader import Result, read
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


def _child_id(result: Result) -> str | None:
    """The sub-agent session a ``task`` result names, if any."""
    sub = result.subagent
    child = sub.get("session") if sub is not None else None
    return child if isinstance(child, str) and child else None


class _Folder:
    """The sub-agent logs of a folder, by the session their header names as parent (the folder
    is listed once per trace; a child's log is read when its parent is replayed)."""

    def __init__(self, folder: Path | None) -> None:
        self.folder = folder
        self._rows: dict[str, list[str]] | None = None

    def children(self, session_id: str) -> dict[str, Any]:
        """``{call id: child session}`` of the logs whose header is ``{"kind": "subagent", "id":
        session_id, "callId": …}``."""
        if self.folder is None:
            return {}
        if self._rows is None:
            from foldlog.stores.file import FileStore

            self._rows = {}
            for info in sorted(FileStore(self.folder).list_sessions(), key=lambda i: i.created):
                if info.parent is not None and info.parent_kind == "subagent" and info.path:
                    self._rows.setdefault(info.parent, []).append(info.path)
        from foldlog.log.session import Session

        out: dict[str, Any] = {}
        for path in self._rows.get(session_id, []):
            child = Session.load(path)
            link = child.parent or {}
            if isinstance(link.get("callId"), str):
                out.setdefault(link["callId"], child)
        return out

    def named(self, child_id: str) -> Any:
        """The log a ``task`` result names (``<id>.jsonl`` beside the parent), or None."""
        if self.folder is None or not (self.folder / f"{child_id}.jsonl").is_file():
            return None
        from foldlog.log.session import Session

        return Session.load(self.folder / f"{child_id}.jsonl")


def _replay(
    session: Any,
    tracer: Any,
    *,
    provider_name: str | None,
    capture_content: bool,
    agent_name: str | None,
    parent_span: Any,
    parent_session: str | None,
    folder: _Folder,
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
    by_call = folder.children(session.id)
    children = 0

    def nest(child: Any, call_id: str) -> int:
        if child is None or child.id in seen:
            return 0
        return 1 + _replay(
            child,
            tracer,
            provider_name=provider_name,
            capture_content=capture_content,
            agent_name=agent_name,
            parent_span=builder.tool_spans.get(call_id),
            parent_session=session.id,
            folder=folder,
            seen=seen,
        )

    for record in read(session.events, state=builder.reading):
        if isinstance(record, Result) and record.call_id is not None:
            # before the result closes the call's span: the child's spans nest under it
            call_id = record.call_id
            child = by_call.pop(call_id, None)
            if child is None and (named := _child_id(record)) is not None:
                child = folder.named(named)
            children += nest(child, call_id)
        builder.take(record)
    for call_id, child in by_call.items():  # a call that never got its result: still its child
        children += nest(child, call_id)
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
        folder=_Folder(folder),
        seen=set(),
    )


__all__ = ["export_session"]
