"""Recording a converted conversation through a :class:`foldlog.Session`.

Seqs in the converted records are local (index in the conversation); the session may already
hold events (a header-created system prompt, an earlier import), so every seq reference —
``sourceEventSeqs`` and the seqs inside a surface op — is shifted by the session's length.

Each event keeps the source's time for it. Sources do not time every record (a turn boundary,
a call split out of a reply): such an event takes the time of the event before it (the first
known time for those at the start); a source without any times leaves the events to the
session's clock. The core asks of ``time`` only that it is an integer: times copied from a
source are not made monotonic (``seq`` is the order).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foldlog.errors import InvalidEventError
from foldlog.interchange.events import Conversation, ImportedEvent
from foldlog.log.grammar.writer import SurfaceOp

if TYPE_CHECKING:
    from foldlog.log.session import Session

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


def event_times(events: list[ImportedEvent]) -> list[int | None]:
    """The time each event is written with: its own, else the one before it (see above)."""
    first = next((ev.time for ev in events if ev.time is not None), None)
    out: list[int | None] = []
    last = first
    for ev in events:
        if ev.time is not None:
            last = ev.time
        out.append(last)
    return out


def write_conversation(conversation: Conversation, session: Session) -> int:
    """Append every event of ``conversation`` to ``session``, all or nothing: the events are
    checked together (`Session.append_events`) and a refused one — named with its index, type
    and source line — leaves the session as it was. Returns the number written."""
    base = len(session.events)
    batch: list[dict[str, Any]] = []
    for ev, time in zip(conversation.events, event_times(conversation.events), strict=True):
        item: dict[str, Any] = {"type": ev.type, "data": ev.data}
        if time is not None:
            item["time"] = time
        if ev.surface_op is not None:
            item["surfaceOp"] = shift_op(ev.surface_op, base)
        if ev.source_event_seqs is not None:
            item["sourceEventSeqs"] = [s + base for s in ev.source_event_seqs]
        batch.append(item)
    try:
        seqs = session.append_events(batch)
    except InvalidEventError as exc:
        index = getattr(exc, "index", None)
        if index is None or not 0 <= index < len(conversation.events):
            raise
        ev = conversation.events[index]
        where = f" (source line {ev.source_line})" if ev.source_line is not None else ""
        raise InvalidEventError(f"imported event {index} ({ev.type}){where}: {exc}") from exc
    if seqs and seqs[0] != base:
        raise InvalidEventError(
            f"session assigned seq {seqs[0]} to the first imported event, expected {base}"
        )
    return len(conversation.events)
