"""Erasure: the content of chosen events removed from a log that stays valid (docs/log-format.md,
"Erasure"; docs/retention.md).

Each erased event keeps its place, its seq, its envelope and what the log's structure needs — a
message's role, a call's id and name (so its result still pairs), a result's call id and name,
turn and step numbers, a reply's usage and cost — and its content becomes the core's
``ERASED_CONTENT`` (``"[erased]"``): its *tombstone*. An erasure event (``log/erasure``) is appended
naming the erased seqs, the reason and the time; never the content. The store then holds the new
log in one step: the file store rewrites the file atomically (the only rewrite the log allows),
PostgreSQL updates the rows and inserts the erasure event in one transaction.

Because a tombstone is an ordinary message with ``"[erased]"`` as its content, every reader of the
log — derivation, counts, exports, traces, the viewer — shows the place as erased without knowing
about erasure; the ``erased`` key in its data names the erasure event that made it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.errors import ErasureError
from foldlog.log import checkpoint
from foldlog.log.forks import fork_reference
from foldlog.log.frozen import thaw
from foldlog.log.grammar import kinds
from foldlog.log.grammar.writer import EventWriter, SurfaceOp

if TYPE_CHECKING:
    from collections.abc import Sequence

    from foldlog.log.session import Session

#: what a tombstone holds in place of content (the core's constant: it projects it as written)
ERASED: str = _native.ERASED_CONTENT
#: the key of a tombstone's data naming the erasure event that made it
ERASED_KEY = "erased"
#: the envelope keys a tombstone keeps (a line's other keys — cached token counts, an importer's
#: extras — are dropped: the counts are for the content that is gone, the extras may hold content)
_ENVELOPE = ("type", "seq", "time", "data", "surfaceOp", "sourceEventSeqs", "ignorable")
#: what each kind keeps of its data besides its content (``message`` is handled by `_message`)
_KEEP: dict[str, tuple[str, ...]] = {
    kinds.SYSTEM_MESSAGE: (),
    kinds.USER_MESSAGE: ("role", "source"),
    kinds.ASSISTANT_MESSAGE: ("turn", "step", "usage", "cost", "interrupted", "model"),
    kinds.TOOL_RESULT: ("turn", "step", "masked"),
    kinds.ASSISTANT_CHUNK: ("turn", "step"),
    kinds.TOOL_CALL: ("turn", "step", "callId", "name"),
    kinds.TURN_START: ("turn", "resumed"),
    kinds.TURN_END: ("turn",),
    kinds.STEP_START: ("turn", "step"),
    kinds.STEP_END: ("turn", "step"),
    kinds.REQUEST_HEADER: ("model",),
    kinds.COMPACTION_START: ("id", "trigger", "strategy"),
    kinds.COMPACTION_SUMMARY: (
        *("id", "folded", "kept", "tokensBefore", "tokensAfter", "model", "mechanical"),
        *("requests", "usage", "cost", "countedTokens"),
    ),
    kinds.COMPACTION_END: ("id", "masked", "pruned"),
    kinds.OUTPUT_VALIDATED: ("turn", "step", "name", "mode", "retries"),
    kinds.APPROVAL_REQUEST: ("turn", "step"),
    kinds.APPROVAL_ANSWER: ("callId", "approved"),
}


@dataclass(frozen=True, slots=True)
class Erased:
    """What `Session.erase` did: the erased ``seqs``, the erasure event's ``seq``, the ``reason``,
    when (``at``, epoch ms) and how many media blobs went with the events (``media_removed``:
    those no other event of the store references, `foldlog.stores.media_erase`)."""

    seqs: tuple[int, ...]
    seq: int
    reason: str
    at: int
    media_removed: int = 0


# --- the tombstone -------------------------------------------------------------------------------


def _picked(data: Mapping[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    return {k: data[k] for k in keys if k in data}


def _call(call: Any) -> Any:
    """A tool call without its arguments: its id and name stay (its result still pairs)."""
    if not isinstance(call, Mapping):
        return call
    kept = _picked(call, ("id", "type"))
    function = call.get("function")
    if isinstance(function, Mapping):
        kept["function"] = {**_picked(function, ("name",)), "arguments": "{}"}
    else:
        kept.update(_picked(call, ("name",)))
        kept["arguments"] = "{}"
    return kept


def _content(content: Any) -> Any:
    """``"[erased]"``; a list of blocks keeps its ``tool_use`` blocks' ids and names (calls made
    as content blocks) after one text block saying the rest was erased."""
    if not isinstance(content, list):
        return ERASED
    uses = [
        {**_picked(b, ("type", "id", "name")), "input": {}}
        for b in content
        if isinstance(b, Mapping) and b.get("type") == "tool_use"
    ]
    return [{"type": "text", "text": ERASED}, *uses] if uses else ERASED


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A message's tombstone: its role, its calls' and its call answer's ids and names."""
    kept = _picked(message, ("role", "toolCallId", "tool_call_id", "toolName", "name", "isError"))
    if message.get("role") != "tool":
        kept.pop("name", None)  # a user's or an assistant's name is about a person: not structure
    kept["content"] = _content(message.get("content"))
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        kept["tool_calls"] = [_call(c) for c in calls]
    return kept


def tombstone_data(kind: str, data: Mapping[str, Any], by: int) -> dict[str, Any]:
    """The data of the tombstone of an event of ``kind`` (``by``: the erasure event's seq)."""
    keep = _KEEP.get(kind, ())
    out = _picked(data, keep)
    if kind in (kinds.SYSTEM_MESSAGE, kinds.USER_MESSAGE):
        out["content"] = ERASED
    elif isinstance(data.get("message"), Mapping):
        out["message"] = _message(data["message"])
    elif kind == kinds.TOOL_CALL:
        out["arguments"] = "{}"
    elif kind == kinds.ASSISTANT_CHUNK and isinstance(data.get("chunk"), Mapping):
        out["chunk"] = _picked(data["chunk"], ("type", "index", "id", "name"))
    elif kind == kinds.TURN_END and isinstance(data.get("reason"), Mapping):
        out["reason"] = _picked(data["reason"], ("kind",))
    elif kind == kinds.APPROVAL_REQUEST and isinstance(data.get("calls"), list):
        out["calls"] = [_picked(c, ("callId", "name")) for c in data["calls"] if isinstance(c, Mapping)]
    elif kind == kinds.COMPACTION_SUMMARY:
        out["summary"] = ERASED
    out[ERASED_KEY] = by
    return out


def tombstone_line(event: Mapping[str, Any], by: int) -> bytes:
    """The tombstone of ``event`` (a whole event as ``Session.events`` gives it) as its log line,
    without a newline."""
    plain = thaw(event)
    data = plain.get("data")
    line = {k: plain[k] for k in _ENVELOPE if k in plain}
    line["data"] = tombstone_data(str(plain.get("type")), data if isinstance(data, Mapping) else {}, by)
    # the envelope's order as the core writes it (type, seq, time, data, …): a reader of the file
    # sees a tombstone where the event was, shaped as it was
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def erased_by(event: Mapping[str, Any]) -> int | None:
    """The erasure event that made ``event`` a tombstone, or None."""
    data = event.get("data")
    by = data.get(ERASED_KEY) if isinstance(data, Mapping) else None
    return by if type(by) is int else None


# --- the plan ------------------------------------------------------------------------------------


def _own_base(session: Session) -> int:
    """The last seq a file fork reads from its parent's log (-1: the log holds all its events)."""
    if session.path is None or session._writer is None:
        return -1
    header = session._core.to_bytes().split(b"\n", 1)[0]
    ref = fork_reference(header)
    return int(ref["atSeq"]) if ref is not None else -1


def check_erasable(session: Session, seqs: Iterable[int], reason: str) -> tuple[int, ...]:
    """The seqs to erase, sorted and each once; `ErasureError` naming the first problem."""
    if not isinstance(reason, str) or not reason.strip():
        raise ErasureError("an erasure needs a reason (who asked, or why): got an empty one")
    wanted = sorted(set(seqs))
    if not wanted:
        raise ErasureError(f"session {session.id}: no events named to erase")
    events = session.events
    base = _own_base(session)
    for seq in wanted:
        if type(seq) is not int:
            raise ErasureError(f"session {session.id}: {seq!r} is not an event seq")
        if seq == -1:
            raise ErasureError(
                f"session {session.id}: the header (seq -1) cannot be erased: it is the session's "
                "identity, not content"
            )
        if not 0 <= seq < len(events):
            raise ErasureError(
                f"session {session.id}: no event #{seq} to erase (events 0..{len(events) - 1})"
            )
        event = events[seq]
        if event.get("type") == kinds.ERASURE:
            raise ErasureError(
                f"session {session.id}: event #{seq} is an erasure record ({kinds.ERASURE}): it holds "
                "no content and is the record of what was erased"
            )
        by = erased_by(event)
        if by is not None:
            raise ErasureError(f"session {session.id}: event #{seq} was already erased (by event #{by})")
        if seq <= base:
            parent = (session.parent or {}).get("id")
            raise ErasureError(
                f"session {session.id}: event #{seq} is in the log of session {parent} (this fork "
                f"reads events 0..{base} from it): erase it there"
            )
    return tuple(wanted)


def _erasure_appender(core: _native.Log, at: int) -> EventWriter:
    def append(kind: str, data: dict[str, Any], op: SurfaceOp | None, sources: Sequence[int] | None) -> int:
        return core.append(kind, data, at, op, list(sources) if sources is not None else None)

    return EventWriter(append)


def erase(session: Session, seqs: Iterable[int], reason: str) -> Erased:
    """`Session.erase`: tombstones for ``seqs``, the erasure event, the store updated in one step,
    and the session's state loaded again from the new log."""
    with session._lock:
        session.flush()
        wanted = check_erasable(session, seqs, reason)
        core = session._core
        by = len(core)
        at = time.time_ns() // 1_000_000
        events = session.events
        tombstones = {seq: tombstone_line(events[seq], by) for seq in wanted}
        parts: list[bytes] = []
        if core.header is not None:
            parts.append(core.to_bytes().split(b"\n", 1)[0] + b"\n")
        start = 0
        for seq in wanted:
            parts += [core.event_lines(start, seq), tombstones[seq], b"\n"]
            start = seq + 1
        parts.append(core.event_lines(start, by))
        source = str(session.path or session.id)
        fresh, _info = _native.Log.parse(b"".join(parts), source, allow_empty=False)
        seq = _erasure_appender(fresh, at).erasure(wanted, reason, at)
        line = fresh.event_lines(seq, seq + 1)
        writer = session._writer
        removed = 0
        if writer is not None:
            if writer.path is not None:
                # its checkpoint holds lines of the erased events: gone before the log is
                # rewritten, so no crash leaves it beside the erased log
                checkpoint.remove(writer.path)
            # the store also removes the media only the erased events referenced (a writer
            # written before that returns None)
            removed = writer.erase(tombstones, line, seq) or 0
        _native.mark_flushed(fresh, len(fresh))
        session._adopt(fresh)
        session.media_cache = type(session.media_cache)()  # it may hold the erased bytes
    session.stream.committed(seq)
    return Erased(wanted, seq, reason, at, removed)


def forks_holding(
    session_id: str, seqs: Iterable[int], headers: Iterable[tuple[str, Mapping[str, Any]]]
) -> list[tuple[str, list[int]]]:
    """The forks of ``session_id`` among ``headers`` (``(session id, header)`` each) that hold
    their own copy of some of ``seqs``, with those seqs: a fork made by copying (no ``log`` in its
    link: PostgreSQL, a session in memory) keeps the events up to its ``atSeq`` as they were; a
    fork that reads its parent's log (``log``) reads the tombstones and holds nothing."""
    wanted = sorted(set(seqs))
    found = []
    for fork_id, header in headers:
        link = header.get("parent")
        if not isinstance(link, Mapping) or link.get("kind") != "fork" or link.get("id") != session_id:
            continue
        at = link.get("atSeq")
        if "log" in link or type(at) is not int:
            continue
        held = [s for s in wanted if s <= at]
        if held:
            found.append((fork_id, held))
    return found


__all__ = [
    "ERASED",
    "ERASED_KEY",
    "Erased",
    "check_erasable",
    "erase",
    "erased_by",
    "forks_holding",
    "tombstone_data",
    "tombstone_line",
]
