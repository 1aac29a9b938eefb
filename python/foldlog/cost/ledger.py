"""Spending of a session, read from its log: per request, per turn, per session, with the
spending of its sub-agents rolled up into the turn (and the session) that ran them.

A request is an ``assistant/message`` appended to the surface (a repaired copy that replaces an
earlier reply is not one); its cost is what it recorded (``data.cost``, written when the
reply came in); a reply logged without one (an imported transcript, a model without a price at
the time) is priced from its usage with the model it names (``data.model``, as imported transcripts
record it) or else the model of the last ``request/header``, at the event's time (`Reply.billed_model`
of `foldlog.log.grammar.reader`, which this ledger reads the log with); else it counts as
*unpriced*. A compaction's summary calls are requests too: the usage its
``compaction/summary`` event records (with their ``cost``, or priced from the model it names), in
the turn they ran in. A sub-agent's spending is the ``subagent`` entry of its
``task`` result's ``meta``. The same events therefore give the same totals live and on reload.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from foldlog.cost.prices import Cost, Price, price_request
from foldlog.log.grammar import kinds
from foldlog.log.grammar.reader import (
    CompactionSummary,
    ReadState,
    Record,
    Reply,
    RequestHeader,
    Result,
    TurnEnd,
    TurnStart,
    read,
    record_of,
)
from foldlog.log.grammar.types import Usage

_USAGE_FIELDS = (
    "prompt_tokens",
    "completion_tokens",
    "cache_hit_tokens",
    "cache_miss_tokens",
    "reasoning_tokens",
    "cache_write_tokens",
)


@dataclass(slots=True)
class Spend:
    """Tokens and money of some requests. ``cost`` covers the ``priced`` requests only;
    ``unpriced`` counts those without a price (their tokens are in ``usage``)."""

    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    cost: float = 0.0
    input: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0
    reasoning: float = 0.0
    unpriced: int = 0
    currency: str | None = None
    #: tokens counted locally for requests whose provider reported no usage (the agent's
    #: ledger counts them for `Options.token_budget`; not in ``usage``, which is what was reported)
    counted_tokens: int = 0

    @property
    def tokens(self) -> int:
        """Prompt + completion tokens: the reported usage and the locally counted ones."""
        return self.usage.total_tokens + self.counted_tokens

    @property
    def fully_priced(self) -> bool:
        return self.unpriced == 0

    def add_request(self, usage: Usage, cost: Cost | None, requests: int = 1) -> None:
        self.requests += requests
        for name in _USAGE_FIELDS:
            setattr(self.usage, name, getattr(self.usage, name) + getattr(usage, name))
        if cost is None:
            self.unpriced += 1
            return
        self.currency = self.currency or cost.currency
        self.cost += cost.total
        self.input += cost.input
        self.cache_read += cost.cache_read
        self.cache_write += cost.cache_write
        self.output += cost.output
        self.reasoning += cost.reasoning

    def add(self, other: Spend) -> None:
        self.requests += other.requests
        for name in _USAGE_FIELDS:
            setattr(self.usage, name, getattr(self.usage, name) + getattr(other.usage, name))
        for name in ("cost", "input", "cache_read", "cache_write", "output", "reasoning"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.unpriced += other.unpriced
        self.currency = self.currency or other.currency
        self.counted_tokens += other.counted_tokens

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a ``task`` result's ``meta.subagent.spend``, ``log inspect --json``)."""
        return {
            "requests": self.requests,
            "usage": self.usage.to_dict(),
            "cost": _round(self.cost),
            "byKind": {
                "input": _round(self.input),
                "cacheRead": _round(self.cache_read),
                "cacheWrite": _round(self.cache_write),
                "output": _round(self.output),
                "reasoning": _round(self.reasoning),
            },
            "unpriced": self.unpriced,
            "currency": self.currency,
            **({"countedTokens": self.counted_tokens} if self.counted_tokens else {}),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Spend:
        def num(v: Any) -> float:
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

        by = data.get("byKind")
        by = by if isinstance(by, Mapping) else {}
        usage = data.get("usage")
        currency = data.get("currency")
        requests = data.get("requests")
        unpriced = data.get("unpriced")
        counted = data.get("countedTokens")
        return cls(
            requests=requests if isinstance(requests, int) else 0,
            usage=Usage.from_dict(usage) if isinstance(usage, Mapping) else Usage(),
            cost=num(data.get("cost")),
            input=num(by.get("input")),
            cache_read=num(by.get("cacheRead")),
            cache_write=num(by.get("cacheWrite")),
            output=num(by.get("output")),
            reasoning=num(by.get("reasoning")),
            unpriced=unpriced if isinstance(unpriced, int) else 0,
            currency=currency if isinstance(currency, str) else None,
            counted_tokens=counted if isinstance(counted, int) and not isinstance(counted, bool) else 0,
        )


def _round(x: float) -> float:
    return round(x, 12)


@dataclass(frozen=True, slots=True)
class RequestCost:
    """One model request of the log: its reply's seq, turn, step, model, usage and cost.
    ``kind``: ``"reply"`` (an agent's request) or ``"summary"`` (a compaction's summary calls,
    from its ``compaction/summary`` event: ``step`` is ``None``)."""

    seq: int
    turn: int | None
    step: int | None
    model: str | None
    usage: Usage
    cost: Cost | None
    kind: str = "reply"


@dataclass(slots=True)
class Ledger:
    """Folds a log's events, in order, into its spending (`feed` one event at a time: the agent
    keeps one up to date as it goes; `of_events` reads a whole log).

    ``price_missing``: price a reply logged without a cost from its usage (else it is unpriced);
    ``prices``: own prices for that, consulted before `genai-prices`."""

    price_missing: bool = True
    #: keep each request's `RequestCost` in `requests` (a report wants them; the agent's running
    #: ledger keeps only the totals: an idle session must hold little)
    keep_requests: bool = True
    prices: Mapping[str, Price] | None = None
    provider: str | None = None
    session: Spend = field(default_factory=Spend)
    turns: dict[int, Spend] = field(default_factory=dict)
    requests: list[RequestCost] = field(default_factory=list)
    #: ``(call id, child session id, its spend)`` of each sub-agent run
    subagents: list[tuple[str, str | None, Spend]] = field(default_factory=list)
    model: str | None = None
    #: the tokens of a request whose reply recorded no usage (``None``: not counted); the agent's
    #: meter gives one for `Options.token_budget` (foldlog.cost.meter)
    count_unreported: Callable[[Reply], int] | None = None
    #: the turn open at the latest event (a compaction's summary call belongs to it)
    open_turn: int | None = None
    #: events fed so far
    seen: int = 0
    #: the reading of the log so far: the model of the next request (``model`` is its start)
    reading: ReadState = field(init=False)
    #: the event types `feed` reads (the others only count in `seen`)
    READS: ClassVar[frozenset[str]] = frozenset(
        {
            kinds.REQUEST_HEADER,
            kinds.ASSISTANT_MESSAGE,
            kinds.TOOL_RESULT,
            kinds.COMPACTION_SUMMARY,
            kinds.TURN_START,
            kinds.TURN_END,
        }
    )

    def __post_init__(self) -> None:
        self.reading = ReadState(self.model)

    @classmethod
    def of_events(cls, events: Iterable[Mapping[str, Any]], **kw: Any) -> Ledger:
        ledger = cls(**kw)
        for record in read(events, state=ledger.reading):
            ledger.take(record)
        return ledger

    def _turn(self, turn: int | None) -> Spend | None:
        if turn is None:
            return None
        return self.turns.setdefault(turn, Spend())

    def feed(self, event: Mapping[str, Any]) -> None:
        """Take in the next event of the log."""
        self.take(record_of(event, self.reading))

    def take(self, record: Record) -> None:
        """Take in the record of the next event (`foldlog.log.grammar.reader`)."""
        self.seen += 1
        if isinstance(record, RequestHeader):
            self.model = self.reading.model
        elif isinstance(record, TurnStart):
            self.open_turn = record.turn
        elif isinstance(record, TurnEnd):
            self.open_turn = None
        elif isinstance(record, Reply):
            if not record.is_request:
                return  # a repaired copy of an earlier reply (load repair), not a request
            if record.usage is None:
                if self.count_unreported is not None:
                    self._count(self.count_unreported(record), record.turn)
                return
            self._request(
                record, record.billed_model, record.cost, record.usage, record.turn, record.step, "reply", 1
            )
        elif isinstance(record, CompactionSummary):
            self._summary(record)
        elif isinstance(record, Result):
            sub = record.subagent
            if sub is None or not isinstance(sub.get("spend"), Mapping):
                return
            spend = Spend.from_dict(sub["spend"])
            child = sub.get("session")
            self.subagents.append((record.call_id or "", child if isinstance(child, str) else None, spend))
            self.session.add(spend)
            t = self._turn(record.turn)
            if t is not None:
                t.add(spend)

    def _summary(self, record: CompactionSummary) -> None:
        """A compaction's summary calls: their reported usage (``usage``, summed over the calls,
        ``requests`` of them) priced like a reply, else the tokens counted locally when the
        summariser reported none (``countedTokens``); both count in the open turn. They are
        priced as the model the summary names, else as the agent's requests are."""
        calls = record.requests if record.requests is not None and record.requests > 0 else 1
        if record.usage is not None:
            model = record.model or self.reading.model
            self._request(record, model, record.cost, record.usage, self.open_turn, None, "summary", calls)
        if record.counted_tokens is not None and record.counted_tokens > 0:
            self._count(record.counted_tokens, self.open_turn)

    def _count(self, tokens: int, turn: int | None) -> None:
        self.session.counted_tokens += tokens
        t = self._turn(turn)
        if t is not None:
            t.counted_tokens += tokens

    def _request(
        self,
        record: Reply | CompactionSummary,
        model: str | None,
        recorded: Mapping[str, Any] | None,
        usage: Usage,
        turn: int | None,
        step: int | None,
        kind: str,
        calls: int,
    ) -> None:
        """One request (``calls`` of them for a summary) at ``model``; ``recorded``: the cost the
        log recorded for it, taken as it is."""
        cost = Cost.from_log(recorded) if recorded is not None else None
        if cost is None and self.price_missing:
            cost = price_request(
                usage, model, provider=self.provider, time_ms=record.time, prices=self.prices
            )
        if self.keep_requests:
            self.requests.append(RequestCost(record.seq, turn, step, model, usage, cost, kind))
        self.session.add_request(usage, cost, calls)
        t = self._turn(turn)
        if t is not None:
            t.add_request(usage, cost, calls)


def session_ledger(session_or_path: Any, **kw: Any) -> Ledger:
    """The `Ledger` of a `Session`, or of the log at a path."""
    from foldlog.log.session import Session

    session = session_or_path if isinstance(session_or_path, Session) else Session.load(session_or_path)
    return Ledger.of_events(session.events, **kw)


__all__ = ["Ledger", "RequestCost", "Spend", "session_ledger"]
