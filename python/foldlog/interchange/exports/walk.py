"""A session's history as the records every exporter writes: the one reading of the log they share.

`history(session)` reads the log's records in seq order (`foldlog.log.grammar.reader`, the log's
one reader) and yields what happened, one record per message: the system prompt, user messages,
assistant replies (with their tool calls), tool results, compactions (the digest's summary) and
turn ends — with the event's time. The exporters
(`export_claude_code`, `export_codex`, `export_atif`) only choose how to write each record.

What the surface ops mean for a history (docs/log-format.md, "Surface ops"):

- ``append``: a record, in order.
- ``fold``: a `Compaction` record (the digest's summary). The formats we write know only one
  kind of compaction — everything before the summary is summarised — so the nodes a fold left
  *after* its digest (a kept tail, recorded before the fold) are written after the summary
  instead of where they were recorded, and the messages it kept *before* its digest (the
  pinned first prompt, earlier digests, user-marked messages) are written where they were
  recorded and again, as copies (``copy=True``, a reply's copy without usage), right after the
  summary: the history read back derives every message the fold kept, the latest summary first
  (warned).
- ``replace`` (a pruned copy of a tool result) and ``insert``: the original is written where it
  happened and the later copy is left out, with a warning; ``reset`` (`Session.replace`, an
  imported new root) is a `Reset` record before its message: Claude Code writes it as a new
  root, the other formats write the messages that follow it after the earlier ones, with a
  warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.log.frozen import thaw
from foldlog.log.grammar import reader as log

if TYPE_CHECKING:
    from foldlog.log.session import Session


@dataclass(slots=True)
class System:
    content: Any
    time: int
    seq: int
    #: written again after a fold's summary (the fold kept it before its digest), not recorded there
    copy: bool = False


@dataclass(slots=True)
class User:
    content: Any
    time: int
    seq: int
    #: the message's ``source`` (``"meta"``, ``"observation"``, …) when it has one
    source: str | None = None
    copy: bool = False


@dataclass(slots=True)
class Call:
    id: str
    name: str
    #: the raw JSON text the model wrote
    arguments: str


@dataclass(slots=True)
class Reply:
    content: Any
    time: int
    seq: int
    reasoning: str | None = None
    calls: list[Call] = field(default_factory=list)
    #: foldlog usage (``promptTokens``, ``completionTokens``, ``cacheHitTokens``, …)
    usage: dict[str, Any] | None = None
    model: str | None = None
    #: a copy carries no usage: it is not another request
    copy: bool = False


@dataclass(slots=True)
class Result:
    call_id: str
    name: str
    content: Any
    is_error: bool
    time: int
    seq: int
    copy: bool = False


@dataclass(slots=True)
class Compaction:
    summary: str
    time: int
    seq: int
    trigger: str = "auto"
    tokens_before: int | None = None


@dataclass(slots=True)
class Reset:
    """The context starts over at the next message (a ``reset`` op: `Session.replace`, an
    imported new root); ``kept``: the messages (not system ones) the reset kept before it."""

    time: int
    seq: int
    kept: int = 0

    def note(self) -> str:
        """The warning of a format that cannot start the context over."""
        return (
            f"the surface reset at #{self.seq} (the context starting over) cannot be carried: "
            "the messages after it follow the earlier ones"
        )


@dataclass(slots=True)
class TurnEnd:
    turn: int
    #: the turn/end reason's ``kind`` (``completed``, ``aborted``, ``error``, …)
    reason: str
    time: int
    seq: int


Record = System | User | Reply | Result | Compaction | Reset | TurnEnd


@dataclass(slots=True)
class History:
    records: list[Record]
    warnings: list[str]


def message_record(record: log.Record) -> Record | None:
    """The export record of a surface event's record (None for a kind that is not a message).
    Contents are copied: the exporters may change what they are given."""
    time = record.time or 0
    if isinstance(record, log.SystemMessage):
        return System(thaw(record.content), time, record.seq)
    if isinstance(record, log.UserMessage):
        return User(thaw(record.content), time, record.seq, record.source)
    if isinstance(record, log.Reply):
        return Reply(
            thaw(record.content),
            time,
            record.seq,
            record.reasoning,
            [Call(c.id, c.name, c.arguments) for c in record.calls],
            record.usage.to_dict() if record.usage is not None else None,
            record.answered,
        )
    if isinstance(record, log.Result):
        return Result(
            record.call_id or "",
            record.name or "",
            thaw(record.content),
            record.is_error,
            time,
            record.seq,
        )
    return None


def _op(record: log.Record) -> log.SurfaceOp | None:
    """The surface op of a surface event (None for the others)."""
    if isinstance(record, log.SystemMessage | log.UserMessage | log.Reply | log.Result | log.Other):
        return record.op
    return None


def _surface_after(session: Session, seq: int) -> list[int]:
    """The surface nodes right after event ``seq``, as the core builds them (the log read up to
    that event)."""
    core, _ = _native.Log.parse(session._core.event_lines(0, seq + 1), "<prefix>")
    return core.surface_nodes()


def _folds(
    session: Session, events: Sequence[log.Record]
) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """For each fold (by its digest's seq): the nodes it left after its digest that were
    recorded before it — written after its summary, each at the last fold that keeps it so —
    and the messages it kept before its digest (not the system prompt): the formats' compaction
    keeps nothing before its summary, so they are written again after it."""
    folds = [r.seq for r in events if log.op_kind(_op(r)) == "fold"]
    last_fold: dict[int, int] = {}
    kept_before: dict[int, list[int]] = {}
    for seq in folds:
        surface = _surface_after(session, seq)
        at = surface.index(seq)
        for node in surface[at + 1 :]:
            last_fold[node] = seq
        kept_before[seq] = [n for n in surface[:at] if not isinstance(events[n], log.SystemMessage)]
    moved_to: dict[int, list[int]] = {}
    for node in sorted(last_fold):
        moved_to.setdefault(last_fold[node], []).append(node)
    return moved_to, kept_before


def history(session: Session) -> History:
    """The session's history as records, in seq order (see the module's notes on surface ops)."""
    records: list[Record] = []
    warnings: list[str] = []
    pruned = inserted = 0
    trigger: dict[str, str] = {}
    tokens_before: dict[str, int] = {}
    summary_of: dict[str, str] = {}
    # one reading of the log, indexed by seq (a fold writes earlier records again)
    events = list(log.read(session.events))
    moved_to, kept_before = _folds(session, events)
    moved = {node for nodes in moved_to.values() for node in nodes}
    for event in events:
        if isinstance(event, log.CompactionStart):
            trigger[str(event.id)] = event.trigger or "auto"
            continue
        if isinstance(event, log.CompactionSummary):
            cid = str(event.id)
            if event.tokens_before is not None:
                tokens_before[cid] = event.tokens_before
            if event.summary is not None:
                summary_of[cid] = event.summary
            continue
        if isinstance(event, log.TurnEnd):
            records.append(TurnEnd(event.turn or 0, event.reason or "completed", event.time or 0, event.seq))
            continue
        op = _op(event)
        kind = log.op_kind(op)
        if op is None:
            continue  # calls, turn and step starts, chunks, request headers: not messages
        if kind == "fold":
            seq = event.seq
            cid = next(reversed(list(trigger)), "")  # the digest closes the latest compaction
            summary = event.content if isinstance(event, log.UserMessage | log.SystemMessage) else None
            records.append(
                Compaction(
                    summary if isinstance(summary, str) else str(summary_of.get(cid, "")),
                    event.time or 0,
                    seq,
                    trigger.get(cid, "auto"),
                    tokens_before.get(cid),
                )
            )
            again = kept_before.get(seq, [])
            if again:
                warnings.append(
                    f"the fold at #{seq} kept {len(again)} message(s) before its digest "
                    f"(#{', #'.join(map(str, again))}): written again after its summary, as the "
                    "format's compaction keeps nothing before its summary"
                )
            for node in again:
                rec = message_record(events[node])
                if isinstance(rec, Reply):
                    rec = replace(rec, copy=True, usage=None)
                elif isinstance(rec, System | User | Result):
                    rec = replace(rec, copy=True)
                if rec is not None:
                    records.append(rec)
            for node in moved_to.get(seq, []):
                rec = message_record(events[node])
                if rec is not None:
                    records.append(rec)
            continue
        if kind == "replace":
            pruned += 1
            continue
        if kind == "reset" and isinstance(op, Mapping):
            keep = op.get("keep")
            nodes = [n for n in keep if isinstance(n, int)] if isinstance(keep, Sequence) else []
            kept = sum(
                1 for n in nodes if 0 <= n < len(events) and not isinstance(events[n], log.SystemMessage)
            )
            records.append(Reset(event.time or 0, event.seq, kept))
        if kind == "insert":
            inserted += 1
        if event.seq in moved:
            continue  # written after the summary of the fold that kept it (below the digest)
        rec = message_record(event)
        if rec is not None:
            records.append(rec)
    if pruned:
        warnings.append(f"{pruned} pruned copy(ies) of tool results left out: the originals are written")
    if inserted:
        warnings.append(
            f"{inserted} inserted message(s) written where they were recorded, not where inserted"
        )
    return History(records, warnings)


def text_of(content: Any) -> str:
    """The text of message content for formats that carry only text (the core's rule)."""
    if isinstance(content, str):
        return content
    return _native.message_text({"role": "user", "content": content})
