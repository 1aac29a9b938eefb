"""The agent's cost keeper: prices each reply as it comes in (the price is recorded in the
reply's ``assistant/message``), keeps the session's `Ledger` up to date from the log, and checks
the budget (`Options.cost_limit`, `Options.token_budget`) before each request.

A request whose provider reported no usage still counts against ``token_budget``: its prompt
and reply counted locally with the session's tokenizer (`Spend.counted_tokens`).

A request starts only while the session's spending — its own requests and its sub-agents' — is
below both limits; the one that reaches a limit ends the run at the next request, with the
turn's end reason ``budget``. So a run passes a limit by at most its last request (and, for a
sub-agent, the child's last request: the child gets what its parent has left).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foldlog.cost.ledger import Ledger, Spend
from foldlog.cost.prices import Cost, Price, price_request, require_price
from foldlog.errors import ConfigError

if TYPE_CHECKING:
    from foldlog.log.grammar.reader import Reply
    from foldlog.log.grammar.types import Usage
    from foldlog.log.session import Session
    from foldlog.log.tokens import Tokenizer


#: past this many new events, `sync` reads their types first and decodes only what it needs
_SKIP_AFTER = 256


class AgentMeter:
    """``cost_limit`` (in the price table's currency, USD for `genai-prices`) and
    ``token_budget`` (prompt + completion tokens) bound the session; ``None``: unbounded. A cost
    limit with a model that has no price is refused here, at the start (`ConfigError`).
    ``price_provider`` and ``prices``: the provider's, as it declares them (`foldlog.providers.
    base.ProviderBase`)."""

    def __init__(
        self,
        session: Session,
        *,
        price_provider: str | None,
        prices: Mapping[str, Price] | None,
        cost_limit: float | None,
        token_budget: int | None,
        model: str | None,
    ) -> None:
        if cost_limit is not None and not cost_limit >= 0:
            raise ConfigError(f"Options.cost_limit must be >= 0 or None, got {cost_limit}")
        if token_budget is not None and token_budget < 0:
            raise ConfigError(f"Options.token_budget must be >= 0 or None, got {token_budget}")
        self.session = session
        self.provider = price_provider or None
        self.prices = prices
        self.cost_limit = cost_limit
        self.token_budget = token_budget
        self._checked: str | None = None
        #: the currency of the prices used so far (None before the first priced reply)
        self.currency: str | None = None
        if cost_limit is not None:
            self._require(model)
        #: the prompt tokens of the request about to be made, counted before it when the
        #: provider has been reporting no usage (`_count_unreported` reads it)
        self._pending_prompt: int | None = None
        self._unreported = False
        #: the surface's seqs and cumulative token counts, for `_surface_before`
        self._prefix: tuple[list[int], list[int]] = ([], [0])
        self._prefix_key: tuple[int, int, str] | None = None
        self.ledger = Ledger(
            prices=self.prices,
            provider=self.provider,
            keep_requests=False,
            count_unreported=self._count_unreported if token_budget is not None else None,
        )

    def _count_unreported(self, reply: Reply) -> int:
        """The tokens of a request whose reply recorded no usage, counted locally with the
        session's tokenizer (exact for models foldlog knows, else its calibrated estimate): the
        prompt as counted just before the request (`over`), or — for a reply the meter did not
        see go out (a resumed log, the first such reply) — the surface messages before it; plus
        the reply itself."""
        self._unreported = True
        tok = self.session.tokenizer(self.ledger.model)
        answer = int(tok.count_message(reply.message)) if reply.message else 0
        prompt, self._pending_prompt = self._pending_prompt, None
        if prompt is None:
            prompt = self._surface_before(max(reply.seq, 0), tok)
        return prompt + answer

    def _surface_before(self, seq: int, tok: Tokenizer) -> int:
        """Prompt tokens of the surface messages before event ``seq`` (what a request answered
        at ``seq`` carried, unless a fold came between). The surface's counts are summed once per
        surface and tokenizer, so a resumed log with many such replies is read in linear time."""
        key = (self.session.rewrite_version, len(self.session.derive_messages()), tok.name)
        if self._prefix_key != key:
            messages = self.session.derive_messages()
            counts = self.session.token_counts(self.ledger.model) if tok.exact else None
            if counts is None or len(counts) != len(messages):
                counts = [int(tok.count_message(m)) for m in messages]
            self._prefix = (self.session.surface_seqs(), list(itertools.accumulate(counts, initial=0)))
            self._prefix_key = key
        seqs, sums = self._prefix
        return sums[bisect.bisect_left(seqs, seq)] + int(tok.request_overhead())

    def _require(self, model: str | None) -> None:
        if model != self._checked or model is None:
            require_price(model, provider=self.provider, prices=self.prices)
            self._checked = model

    def sync(self) -> Ledger:
        """Bring the ledger up to the session's last event."""
        events = self.session.events
        n = len(events)
        start = self.ledger.seen
        if n - start > _SKIP_AFTER:  # a resumed log: decode only the events the ledger reads
            kinds = events.types()
            for i in range(start, n):
                if kinds[i] in Ledger.READS:
                    self.ledger.feed(events[i])
            self.ledger.seen = n
        elif start < n:
            for ev in events.plain(start, n):  # read once: no frozen copies
                self.ledger.feed(ev)
        return self.ledger

    @property
    def spend(self) -> Spend:
        """The session's spending so far (sub-agents included)."""
        return self.sync().session

    def price(self, usage: Usage, model: str | None) -> Cost | None:
        """The cost of a reply to the request just made with ``model`` (the model its
        ``request/header`` named, which the agent passes). Reads nothing of the log: the ledger is
        brought up to date only where its totals are read (`over` with a limit, `spend`,
        `remaining`), so a step without limits decodes none of its events."""
        cost = price_request(usage, model, provider=self.provider, prices=self.prices)
        if cost is not None:
            self.currency = cost.currency
        return cost

    def over(self, model: str | None) -> dict[str, Any] | None:
        """``None`` while a request of ``model`` may start; else the detail of the ``budget``
        end (``limit``, ``used``, ``message``)."""
        if self.cost_limit is None and self.token_budget is None:
            return None
        spend = self.spend
        if self.token_budget is not None and self._unreported:
            # the provider reports no usage: count this request's prompt now, as it goes out
            self._pending_prompt = int(self.session.token_count(model or self.ledger.model))
        if self.token_budget is not None and spend.tokens >= self.token_budget:
            return {
                "limit": "tokens",
                "budget": self.token_budget,
                "used": spend.tokens,
                "message": f"the session used {spend.tokens} tokens of its token_budget {self.token_budget}",
            }
        if self.cost_limit is not None:
            self._require(model)
            if spend.unpriced:
                raise ConfigError(
                    f"Options.cost_limit is set but {spend.unpriced} request(s) of this session have "
                    "no price: the limit would cover only part of the run"
                )
            if spend.cost >= self.cost_limit:
                currency = spend.currency or "USD"
                return {
                    "limit": "cost",
                    "budget": self.cost_limit,
                    "used": round(spend.cost, 12),
                    "currency": currency,
                    "message": (
                        f"the session spent {spend.cost:.6f} {currency} of its cost_limit "
                        f"{self.cost_limit} {currency}"
                    ),
                }
        return None

    def remaining(self) -> tuple[float | None, int | None]:
        """What is left of each limit (for a sub-agent's own limits)."""
        spend = self.spend
        cost = None if self.cost_limit is None else max(self.cost_limit - spend.cost, 0.0)
        tokens = None if self.token_budget is None else max(self.token_budget - spend.tokens, 0)
        return cost, tokens


__all__ = ["AgentMeter"]
