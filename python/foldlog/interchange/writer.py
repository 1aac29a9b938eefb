"""Recording a converted conversation through a :class:`foldlog.Session`.

Seqs in the converted records are local (index in the conversation); the session may already
hold events (a header-created system prompt, an earlier import), so every seq reference —
``sourceEventSeqs`` and the seqs inside a surface op — is shifted by the session's length.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foldlog.errors import InvalidEventError
from foldlog.interchange.events import Conversation, SurfaceOp

if TYPE_CHECKING:
    from foldlog.session import Session

_SEQ_FIELDS = ("start", "end", "after")


def shift_op(op: SurfaceOp | None, base: int) -> SurfaceOp | None:
    if op is None or isinstance(op, str) or base == 0:
        return op
    moved: dict[str, Any] = dict(op)
    for key in _SEQ_FIELDS:
        if isinstance(moved.get(key), int):
            moved[key] += base
    if isinstance(moved.get("keep"), list):
        moved["keep"] = [s + base for s in moved["keep"]]
    return moved


def write_conversation(conversation: Conversation, session: Session) -> int:
    """Append every event of ``conversation`` to ``session``; returns the number written."""
    base = len(session.events)
    for index, ev in enumerate(conversation.events):
        sources = [s + base for s in ev.source_event_seqs] if ev.source_event_seqs is not None else None
        try:
            seq = session.append_event(
                ev.type, ev.data, surface_op=shift_op(ev.surface_op, base), source_event_seqs=sources
            )
        except InvalidEventError as exc:
            where = f" (source line {ev.source_line})" if ev.source_line is not None else ""
            raise InvalidEventError(f"imported event {index} ({ev.type}){where}: {exc}") from exc
        if seq != base + index:
            raise InvalidEventError(
                f"session assigned seq {seq} to imported event {index}, expected {base + index}"
            )
    return len(conversation.events)
