"""What fills the context: the tokens of a request split by what they are (``foldlog log context``,
chat's ``/context``, the viewer's header).

Every figure is a count the core already made — the per-message counts of the surface
(`Session.token_counts`: an exact tokenizer's, kept with the events; else the planner's input,
`Session.plan_history`, counted with the calibrated estimate), the tool schemas and the request's
framing from the same tokenizer — and the split into pinned prefix and verbatim tail is the
planner's (`PlanHistory.plan`). Nothing is tokenized again here, so the categories add up to
`Session.token_count(model, tools)` exactly.

The categories are disjoint; a message belongs to the first that fits, in this order: ``system``
(system prompts), ``digests`` (a fold's digest), ``images and other estimated`` (a message holding
non-text content, whose cost is partly an estimate: counted here whole), ``pinned`` (the planner's
pinned prefix: the first user turn), ``kept`` (a message an earlier fold kept), ``tail`` (the
verbatim tail the planner keeps), ``tool results`` (the other tool results), ``messages`` (the
rest: the user and assistant messages the next fold would take). ``tool schemas`` and ``request
framing`` (the tokens every request adds around its messages) are not messages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.errors import FoldlogError
from foldlog.log.grammar import kinds
from foldlog.log.grammar.reader import record_of
from foldlog.log.grammar.records import RequestHeader

if TYPE_CHECKING:
    from foldlog.log.session import Session
    from foldlog.log.tokens import Tokenizer

#: the categories, in the order they are shown (and tried, for the messages)
CATEGORIES = (
    "system",
    "tool schemas",
    "request framing",
    "pinned",
    "digests",
    "kept",
    "tail",
    "tool results",
    "images and other estimated",
    "messages",
)


class ContextAtError(FoldlogError, ValueError):
    """``--at SEQ`` names no event of the log."""


@dataclass(frozen=True, slots=True)
class ContextBreakdown:
    """The tokens of one request by category (`CATEGORIES`), their total, and the window."""

    session: str
    #: the event the request was made before (``None``: the next request)
    at_seq: int | None
    categories: dict[str, int]
    #: how many messages each message category holds
    counts: dict[str, int]
    total: int
    exact: bool
    tokenizer: str
    messages: int
    window: int | None
    #: the tokens at which a compaction starts (``compact_ratio`` of the window)
    trigger: int | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "at": self.at_seq,
            "categories": dict(self.categories),
            "messages_per_category": dict(self.counts),
            "total": self.total,
            "exact": self.exact,
            "tokenizer": self.tokenizer,
            "messages": self.messages,
            "window": self.window,
            "trigger": self.trigger,
        }

    def lines(self, width: int = 40) -> list[str]:
        """The breakdown as text: one line per category with its share, then the window bar with
        the trigger drawn in (``|``)."""
        scale = self.window or self.total or 1
        head = f"context of {self.session} " + (
            f"(the request before event #{self.at_seq})" if self.at_seq is not None else "(the next request)"
        )
        how = "exact" if self.exact else "estimated"
        out = [f"{head} · {self.messages} message(s), counted with {self.tokenizer} ({how})"]
        for name, tokens in self.categories.items():
            if not tokens and name not in ("system", "messages"):
                continue
            share = f"{tokens / scale:6.1%}"
            n = self.counts.get(name)
            detail = f"  ({n} message{'s' if n != 1 else ''})" if n is not None else ""
            out.append(f"  {name:<28}{tokens:>10,}  {share}{detail}")
        if self.window:
            share = f"{self.total / self.window:6.1%}"
            out.append(f"  {'total':<28}{self.total:>10,}  {share} of {self.window:,}")
        else:
            out.append(f"  {'total':<28}{self.total:>10,}  (window unknown)")
        out.append("  " + self.bar(width))
        return out

    def bar(self, width: int = 40) -> str:
        """``[████████░░░░░░|░░░]``: the window filled by the total, the trigger at ``|``."""
        if not self.window:
            return f"{self.total:,} tokens (window unknown: no bar)"
        filled = min(round(self.total / self.window * width), width)
        cells = ["█"] * filled + ["░"] * (width - filled)
        if self.trigger:
            mark = min(round(self.trigger / self.window * width), width - 1)
            cells[mark] = "|"
        trigger = f", compaction at {self.trigger:,}" if self.trigger else ""
        return f"[{''.join(cells)}] {self.total:,}/{self.window:,}{trigger}"


def prefix_log(session: Session, upto: int) -> _native.Log:
    """The log as it stood before event ``upto``, read by the core (as the exports' walk reads a
    fold's surface): its surface is what a request made then carried."""
    if not 0 <= upto < len(session):
        raise ContextAtError(f"session {session.id} has no event #{upto} (it has {len(session)} events)")
    core, _ = _native.Log.parse(session._core.event_lines(0, upto), "<prefix>")
    return core


def message_tokens(core: _native.Log, tokenizer: Tokenizer) -> list[int]:
    """The tokens of each derived message of ``core`` (parallel to its derived messages): the
    exact tokenizer's per-event counts, else the planner's input counted with the estimate."""
    counts = _native.surface_token_counts(core, tokenizer._counter)
    if counts is not None:
        return [int(n) for n in counts]
    return [int(n) for n in _native.plan_history(core, tokenizer._counter).tokens()]


def breakdown(
    session: Session,
    *,
    at_seq: int | None = None,
    model: str | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    window: int | None = None,
    compact_ratio: float = 0.8,
    plan: Mapping[str, Any] | None = None,
) -> ContextBreakdown:
    """The tokens of the next request (or of the one made before event ``at_seq``) by category.

    ``tools``: the tool schemas the request carries (the latest ``request/header``'s when not
    given: `request_tools`); ``window``: the context window (the trigger is ``compact_ratio``
    of it); ``plan``: the planner's settings (`CompactionSettings.plan_kwargs`), its defaults
    when not given. With ``at_seq`` None the total is `Session.token_count(model, tools)`."""
    tokenizer = session.tokenizer(model)
    core = session._core if at_seq is None else prefix_log(session, at_seq)
    if at_seq is None:
        own = session.token_counts(model)
        tokens = list(own) if own is not None else list(session.plan_history(model).tokens())
        history = session.plan_history(model)
    else:
        tokens = message_tokens(core, tokenizer)
        history = _native.plan_history(core, tokenizer._counter)
    seqs = core.derived_seqs()
    settings = dict(plan or {})
    settings.setdefault("context_window", window or 0)
    settings["force"] = True  # the split a fold would make now, whether or not one is due
    planned = history.plan(**settings)
    roles, _, flags, _, _ = history.columns()
    blocks = set(core.derived().block_indexes(0, len(seqs)))
    kept = _fold_kept(session, seqs, flags)
    categories = dict.fromkeys(CATEGORIES, 0)
    counts = dict.fromkeys((c for c in CATEGORIES if c not in ("tool schemas", "request framing")), 0)
    for index, (seq, n) in enumerate(zip(seqs, tokens, strict=True)):
        role = roles[index]
        if role == "s":
            name = "system"
        elif flags[index] & _native.PLAN_DIGEST:
            name = "digests"
        elif index in blocks:
            name = "images and other estimated"
        elif index < planned.head:
            name = "pinned"
        elif seq in kept:
            name = "kept"
        elif index >= planned.tail_start:
            name = "tail"
        elif role == "t":
            name = "tool results"
        else:
            name = "messages"
        categories[name] += n
        counts[name] += 1
    if tools:
        categories["tool schemas"] = int(tokenizer.count_tools(tools))
    categories["request framing"] = int(tokenizer.request_overhead())
    estimated = bool(blocks) or not tokenizer.exact
    trigger = int(window * compact_ratio) if window else None
    return ContextBreakdown(
        session=session.id,
        at_seq=at_seq,
        categories=categories,
        counts=counts,
        total=sum(categories.values()),
        exact=not estimated,
        tokenizer=tokenizer.name,
        messages=len(seqs),
        window=window,
        trigger=trigger,
    )


def _fold_kept(session: Session, seqs: Sequence[int], flags: bytes) -> set[int]:
    """The messages the folds on the surface kept (each digest's fold op's ``keep``)."""
    kept: set[int] = set()
    events = session.events
    for index, seq in enumerate(seqs):
        if not flags[index] & _native.PLAN_DIGEST:
            continue
        op = events[seq].get("surfaceOp")
        keep = op.get("keep") if isinstance(op, Mapping) else None
        if isinstance(keep, Sequence):
            kept.update(k for k in keep if isinstance(k, int))
    return kept


def request_tools(session: Session, before: int | None = None) -> list[Mapping[str, Any]]:
    """The tool schemas of the latest ``request/header`` (before event ``before``): what the
    session's requests carried, for a stored session whose agent is not running."""
    events = session.events
    types = events.types()
    end = len(types) if before is None else min(before, len(types))
    for seq in range(end - 1, -1, -1):
        if types[seq] == kinds.REQUEST_HEADER:
            header = record_of(events[seq])
            tools = header.tools if isinstance(header, RequestHeader) else ()
            return [t for t in tools if isinstance(t, Mapping)]
    return []


__all__ = [
    "CATEGORIES",
    "ContextAtError",
    "ContextBreakdown",
    "breakdown",
    "message_tokens",
    "prefix_log",
    "request_tools",
]
