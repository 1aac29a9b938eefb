"""What the viewer's page holds of a session: its events and what foldlog knows about them.

One `SessionData` per session shown — the session itself, its sub-agents' sessions (nested
under the call that started them) and its forks (linked at the event they branch after) — each
with:

- ``events``: the log's events as stored (redacted unless told not to), embedded once as JSON;
  the page builds the DOM from them, lazily;
- ``tokens``: the tokens of every message that was ever on the surface, by seq: the core's
  per-message counts (`foldlog.log.context.message_tokens`) of the surface as it stood before
  each rewrite (a fold, a mask, a reset) and of the surface now — a folded message is counted as
  it was when the model saw it, nothing is counted in Python;
- ``checkpoints``: the surface (its nodes' seqs) right after the last rewrite before each
  request, as the core builds it from the log read up to there (the exports' walk,
  `foldlog.interchange.exports.walk`): the page shows "context at this request" as those nodes
  followed by the messages appended after them;
- ``requests``: each reply's usage and cost (the cost ledger's reading, `foldlog.cost.Ledger`,
  a reply logged without a cost priced from its usage), and ``spend``, the session's total.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.interchange.exports.walk import _surface_after
from foldlog.log.context import message_tokens, prefix_log
from foldlog.log.grammar.reader import read
from foldlog.log.grammar.records import MessageRecord, Other, Record, Reply, SurfaceOp
from foldlog.log.media import Resolver

if TYPE_CHECKING:
    from foldlog.log.session import Session
    from foldlog.log.tokens import Tokenizer

#: how deep sub-agents of sub-agents (and forks of forks) are followed
MAX_DEPTH = 8


@dataclass(slots=True)
class SessionData:
    """One session as the page sees it (``to_json`` is what is embedded)."""

    id: str
    #: ``"root"``, ``"subagent"`` (under ``call_id`` of ``parent``) or ``"fork"`` (of ``parent``)
    role: str
    header: Any
    events: list[Any]
    #: the seq of the first embedded event (a fork embeds only its own, after its parent's)
    first: int
    tokens: dict[int, int]
    surface: list[int]
    derived: list[int]
    checkpoints: list[tuple[int, list[int]]]
    requests: dict[int, dict[str, Any]]
    spend: dict[str, Any]
    tokenizer: str
    exact: bool
    model: str | None
    parent: int | None = None
    call_id: str | None = None
    at_seq: int | None = None
    #: the sub-agents' sessions by the call they answer (placed under it)
    children: dict[str, int] = field(default_factory=dict)
    #: every sub-agent's session (one without a known call is shown after the timeline)
    subagents: list[int] = field(default_factory=list)
    forks: list[int] = field(default_factory=list)
    context: dict[str, Any] | None = None
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "role": self.role,
            "header": self.header,
            "events": self.events,
            "first": self.first,
            "tokens": {str(k): v for k, v in self.tokens.items()},
            "surface": self.surface,
            "derived": self.derived,
            "checkpoints": self.checkpoints,
            "requests": {str(k): v for k, v in self.requests.items()},
            "spend": self.spend,
            "tokenizer": self.tokenizer,
            "exact": self.exact,
            "model": self.model,
            "parent": self.parent,
            "callId": self.call_id,
            "atSeq": self.at_seq,
            "children": self.children,
            "subagents": self.subagents,
            "forks": self.forks,
            "context": self.context,
            "path": self.path,
        }


def _op(record: Record) -> SurfaceOp | None:
    """The surface op of a record (``None`` for a kind that is not on the surface)."""
    if isinstance(record, MessageRecord | Other):
        return record.op
    return None


def _rewrites(ops: Sequence[SurfaceOp | None]) -> list[int]:
    """The seqs of the surface events whose op is not ``append``: where the surface was rewritten."""
    return [seq for seq, op in enumerate(ops) if op is not None and op != "append"]


def _runs(ops: Sequence[SurfaceOp | None], rewrites: Sequence[int]) -> list[int]:
    """The first rewrite of each run of rewrites with no message appended between them (a
    compaction's masks, a reset and its appends' start): the surface before it held every
    message the run took away."""
    firsts: list[int] = []
    last = -2
    for seq in rewrites:
        if not firsts or any(ops[i] == "append" for i in range(last + 1, seq)):
            firsts.append(seq)
        last = seq
    return firsts


def _request_checkpoints(records: Sequence[Record], rewrites: Sequence[int]) -> list[int]:
    """The last rewrite before each reply (deduplicated): the surfaces the page needs to show
    every request's context."""
    needed: list[int] = []
    at = 0
    latest: int | None = None
    for seq, record in enumerate(records):
        while at < len(rewrites) and rewrites[at] < seq:
            latest = rewrites[at]
            at += 1
        if isinstance(record, Reply) and latest is not None and (not needed or needed[-1] != latest):
            needed.append(latest)
    return needed


def _counts_of(core: _native.Log, tokenizer: Tokenizer) -> dict[int, int]:
    return dict(zip(core.derived_seqs(), message_tokens(core, tokenizer), strict=True))


def _requests(events: Sequence[Mapping[str, Any]]) -> tuple[dict[int, dict[str, Any]], dict[str, Any]]:
    from foldlog.cost.ledger import Ledger

    ledger = Ledger.of_events(events)
    out: dict[int, dict[str, Any]] = {}
    for req in ledger.requests:
        out[req.seq] = {
            "kind": req.kind,
            "model": req.model,
            "usage": req.usage.to_dict(),
            "cost": req.cost.to_log() if req.cost is not None else None,
        }
    return out, ledger.session.to_dict()


def session_data(
    session: Session,
    *,
    redact: Callable[[Any], Any],
    role: str = "root",
    first: int = 0,
    context: Mapping[str, Any] | None = None,
) -> SessionData:
    """The page's view of one session (see the module's notes); ``first``: the first event to
    embed (a fork's own events start after its parent's); ``context``: the next request's
    breakdown (`foldlog.log.context.ContextBreakdown.to_dict`), drawn in the page's header."""
    events: list[dict[str, Any]] = session._core.events(0, len(session))
    # images shown as they were sent: media references read back (one whose bytes are gone stays)
    events = Resolver(session.media, session.id, keep_missing=True).resolve(events)
    tokenizer = session.tokenizer()
    own = session.token_counts()
    final = own if own is not None else session.plan_history().tokens()
    tokens = dict(zip(session.surface_seqs(), (int(n) for n in final), strict=True))
    records = list(read(events))
    ops = [_op(r) for r in records]
    rewrites = _rewrites(ops)
    for seq in _runs(ops, rewrites):
        for key, value in _counts_of(prefix_log(session, seq), tokenizer).items():
            tokens.setdefault(key, value)
    checkpoints = [(seq, _surface_after(session, seq)) for seq in _request_checkpoints(records, rewrites)]
    requests, spend = _requests(events)
    return SessionData(
        id=session.id,
        role=role,
        header=redact(session.header and dict(session.header)),
        events=[redact(e) for e in events[first:]],
        first=first,
        tokens={k: v for k, v in tokens.items() if k >= first or role != "fork"},
        surface=session.surface_nodes(),
        derived=session.surface_seqs(),
        checkpoints=checkpoints,
        requests=requests,
        spend=spend,
        tokenizer=tokenizer.name,
        exact=tokenizer.exact,
        model=session.counting_model(),
        context=dict(context) if context is not None else None,
        path=str(session.path) if session.path else None,
    )


def _linked(folder: Path) -> dict[str, list[tuple[str, str]]]:
    """``(kind, path)`` of the sessions in ``folder`` whose header names a parent (sub-agents and
    forks), by that parent's id, oldest first."""
    from foldlog.stores.file import FileStore

    rows = [
        info
        for info in FileStore(folder).list_sessions()
        if info.parent and info.parent_kind in ("subagent", "fork") and info.path
    ]
    rows.sort(key=lambda i: i.created)
    out: dict[str, list[tuple[str, str]]] = {}
    for info in rows:
        out.setdefault(str(info.parent), []).append((str(info.parent_kind), str(info.path)))
    return out


def collect(
    session: Session,
    folder: str | os.PathLike[str] | None,
    *,
    redact: Callable[[Any], Any],
    context: Mapping[str, Any] | None = None,
) -> list[SessionData]:
    """The session and, from ``folder`` (its log's folder), its sub-agents and forks, followed
    down to `MAX_DEPTH`: index 0 is the session itself."""
    from foldlog.log.session import Session

    out = [session_data(session, redact=redact, context=context)]
    if folder is None:
        return out
    linked = _linked(Path(folder))
    todo: list[tuple[int, Session, int]] = [(0, session, 0)]
    seen = {session.id}
    while todo:
        index, current, depth = todo.pop(0)
        if depth >= MAX_DEPTH:
            continue
        for kind, path in linked.get(current.id, []):
            child = Session.load(path)
            if child.id in seen:
                continue
            seen.add(child.id)
            link = child.parent or {}
            at = link.get("atSeq") if kind == "fork" else None
            first = int(at) + 1 if isinstance(at, int) else 0
            data = session_data(child, redact=redact, role=kind, first=first)
            data.parent = index
            data.at_seq = first - 1 if kind == "fork" else None
            call = link.get("callId")
            data.call_id = call if isinstance(call, str) else None
            out.append(data)
            child_index = len(out) - 1
            if kind == "subagent":
                out[index].subagents.append(child_index)
                if data.call_id:
                    out[index].children[data.call_id] = child_index
            else:
                out[index].forks.append(child_index)
            todo.append((child_index, child, depth + 1))
    return out


__all__ = ["MAX_DEPTH", "SessionData", "collect", "session_data"]
