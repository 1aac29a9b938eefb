"""Token prices and per-session cost accounting.

Prices are per 1M tokens. ``cost = (hit·p_hit + miss·p_in + out·p_out) / 1e6`` where ``out``
counts completion tokens (reasoning included: providers bill it as output).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from foldlog.providers.base import Usage


@dataclass(frozen=True, slots=True)
class Price:
    """Per-1M-token prices: cache hit, cache miss (input) and output."""

    hit: float
    input: float
    output: float
    currency: str = "CNY"

    def cost(self, usage: Usage) -> float:
        return (
            usage.cache_hit_tokens * self.hit
            + usage.cache_miss_tokens * self.input
            + usage.completion_tokens * self.output
        ) / 1e6


# DeepSeek's table (CNY per 1M tokens). Override per provider with ``prices=``.
DEEPSEEK_PRICES: Mapping[str, Price] = {
    "deepseek-v4-flash": Price(hit=0.02, input=1.0, output=2.0),
    "deepseek-v4-pro": Price(hit=0.025, input=3.0, output=6.0),
}


@dataclass(slots=True)
class UsageMeter:
    """Accumulates usage and cost over a session; :meth:`add` returns the per-turn report."""

    price: Price | None = None
    totals: Usage = field(default_factory=Usage)
    cost: float = 0.0
    requests: int = 0

    def add(self, usage: Usage) -> dict[str, Any]:
        t = self.totals
        t.prompt_tokens += usage.prompt_tokens
        t.completion_tokens += usage.completion_tokens
        t.cache_hit_tokens += usage.cache_hit_tokens
        t.cache_miss_tokens += usage.cache_miss_tokens
        t.reasoning_tokens += usage.reasoning_tokens
        t.cache_write_tokens += usage.cache_write_tokens
        turn_cost = self.price.cost(usage) if self.price is not None else 0.0
        self.cost += turn_cost
        self.requests += 1
        return {
            **usage.to_dict(),
            "cacheHitRate": usage.cache_hit_rate,
            "cost": turn_cost,
            "sessionCacheHitRate": self.hit_rate,
            "sessionCost": self.cost,
            "currency": self.price.currency if self.price is not None else None,
        }

    @property
    def hit_rate(self) -> float:
        return self.totals.cache_hit_rate
