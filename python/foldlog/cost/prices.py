"""What one request cost: its usage priced by the `genai-prices` package (``foldlog[cost]``).

A request is priced as one whole request (its total is genai-prices' price of the whole usage, so
a tier keyed on the request's input size applies to all of it), then taken apart by kind of
token — uncached input, cache reads, cache writes, output, and the reasoning part of the output —
so a report can say where the money went. `genai-prices` knows
the prices of the hosted models (with their dated and time-of-day variants: a request is priced
at the time it was made). The one table kept here, `FALLBACK_PRICES`, holds only the model it
lacks: the bundled local model, which costs nothing. A caller's own `Price` for a model (a
provider's ``prices=``) wins over both.

`genai-prices` is imported on the first price asked for, never by ``import foldlog``.
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from foldlog.errors import ConfigError

if TYPE_CHECKING:
    from foldlog.log.grammar.types import Usage

#: the price source named in a recorded cost when the price came from a `Price`
TABLE_SOURCE = "foldlog"
PER = Decimal(1_000_000)


@dataclass(frozen=True, slots=True)
class Price:
    """Prices per 1M tokens. ``cache_write`` defaults to ``input``, ``cache_read`` to ``input``,
    ``reasoning`` to ``output`` (what providers bill when they name no other price)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    reasoning: float | None = None
    currency: str = "USD"

    def cost(self, usage: Usage) -> Cost:
        rates = (
            self.input,
            self.input if self.cache_read is None else self.cache_read,
            self.input if self.cache_write is None else self.cache_write,
            self.output,
            self.output if self.reasoning is None else self.reasoning,
        )
        counts = token_kinds(usage)
        fresh, reads, writes, output, reasoning = (
            float(Decimal(n) * Decimal(repr(r)) / PER) for n, r in zip(counts, rates, strict=True)
        )
        return Cost(fresh, reads, writes, output, reasoning, currency=self.currency, source=TABLE_SOURCE)


#: models `genai-prices` does not list: the local llama.cpp model (`foldlog.providers.local.provider`)
FALLBACK_PRICES: Mapping[str, Price] = {
    "gemma-3-270m": Price(input=0.0, output=0.0),
}


def token_kinds(usage: Usage) -> tuple[int, int, int, int, int]:
    """``(uncached input, cache reads, cache writes, non-reasoning output, reasoning)``: the
    tokens of each price. The input kinds add up to ``prompt_tokens``, the output kinds to
    ``completion_tokens`` (counts a provider reported inconsistently are clamped at 0)."""
    reads = min(max(usage.cache_hit_tokens, 0), max(usage.prompt_tokens, 0))
    writes = min(max(usage.cache_write_tokens, 0), max(usage.prompt_tokens - reads, 0))
    fresh = max(usage.prompt_tokens - reads - writes, 0)
    reasoning = min(max(usage.reasoning_tokens, 0), max(usage.completion_tokens, 0))
    output = max(usage.completion_tokens - reasoning, 0)
    return fresh, reads, writes, output, reasoning


@dataclass(frozen=True, slots=True)
class Cost:
    """A request's cost by kind of token, in ``currency``; ``source`` names the prices used."""

    input: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    output: float = 0.0
    reasoning: float = 0.0
    currency: str = "USD"
    source: str = TABLE_SOURCE

    @property
    def total(self) -> float:
        parts = (self.input, self.cache_read, self.cache_write, self.output, self.reasoning)
        return float(sum((Decimal(repr(p)) for p in parts), Decimal(0)))

    def to_log(self) -> dict[str, Any]:
        """The ``cost`` of an ``assistant/message`` event (docs/log-format.md, "Cost")."""
        return {
            "total": self.total,
            "input": self.input,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "output": self.output,
            "reasoning": self.reasoning,
            "currency": self.currency,
            "source": self.source,
        }

    @classmethod
    def from_log(cls, data: Mapping[str, Any]) -> Cost | None:
        """The cost a log recorded; ``None`` when ``data`` is not one."""
        if not isinstance(data, Mapping):
            return None

        def num(key: str) -> float:
            v = data.get(key)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

        currency = data.get("currency")
        source = data.get("source")
        return cls(
            num("input"),
            num("cacheRead"),
            num("cacheWrite"),
            num("output"),
            num("reasoning"),
            currency if isinstance(currency, str) else "USD",
            source if isinstance(source, str) else TABLE_SOURCE,
        )


def sum_costs(costs: Sequence[Cost]) -> Cost:
    """Several requests' costs as one (a compaction's summary calls), kind by kind; the
    currency and price source of the first."""
    first = costs[0] if costs else Cost()

    def total(kind: str) -> float:
        return float(sum((Decimal(repr(getattr(c, kind))) for c in costs), Decimal(0)))

    return Cost(
        total("input"),
        total("cache_read"),
        total("cache_write"),
        total("output"),
        total("reasoning"),
        currency=first.currency,
        source=first.source,
    )


def _genai_prices() -> Any:
    try:
        import genai_prices
    except ImportError:
        return None
    return genai_prices


@functools.lru_cache(maxsize=1)
def genai_prices_source() -> str:
    gp = _genai_prices()
    return f"genai-prices {gp.__version__}" if gp is not None else ""


def price_request(
    usage: Usage,
    model: str | None,
    *,
    provider: str | None = None,
    time_ms: int | None = None,
    prices: Mapping[str, Price] | None = None,
) -> Cost | None:
    """The cost of one request of ``model`` made at ``time_ms`` (epoch ms; ``None``: now), or
    ``None`` when no price is known (no model, a model neither table lists, or `genai-prices`
    not installed). ``provider``: the `genai-prices` provider id (``"deepseek"``, ``"openai"``;
    ``None``: found from the model name). ``prices``: the caller's own prices, consulted first."""
    if not model:
        return None
    own = (prices or {}).get(model) or FALLBACK_PRICES.get(model)
    if own is not None:
        return own.cost(usage)
    gp = _genai_prices()
    if gp is None:
        return None
    time_ms = time_ms if time_ms is not None else int(_dt.datetime.now(_dt.UTC).timestamp() * 1000)
    model_price = _model_price(provider, model, time_ms // 60_000)
    if model_price is None:
        return None
    return whole_request_cost(gp, model_price, usage)


def whole_request_cost(gp: Any, model_price: Any, usage: Usage) -> Cost:
    """One request priced whole by genai-prices: its total is genai-prices' price of the whole
    usage, so tiers keyed on the request's input (Claude's and Gemini's long-context rates) apply
    to every kind of token of it at once. The split by kind is the same total taken apart at the
    rates of that tier: each part is the count of its kind at the rate genai-prices charges, for a
    request of this input size, for that kind (cache reads, cache writes, reasoning); the
    uncached input and the plain output are the rest of each direction, and a charge that is
    neither (a per-request fee) goes to ``input``. The parts add up to genai-prices' total."""
    fresh, reads, writes, output, reasoning = token_kinds(usage)
    total_in = fresh + reads + writes
    total_out = output + reasoning
    if not total_in and not total_out:
        return Cost(source=genai_prices_source())

    def calc(**counts: int) -> Any:
        # genai-prices counts cache reads/writes inside input_tokens, reasoning inside output_tokens
        return model_price.calc_price(gp.Usage(**{k: v for k, v in counts.items() if v}))

    whole = calc(
        input_tokens=total_in,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        output_tokens=total_out,
        output_reasoning_tokens=reasoning,
    )

    def share(count: int, price: Decimal, of: int) -> Decimal:
        # ``count`` tokens at the rate ``price`` paid for ``of`` tokens of that kind
        return price * Decimal(count) / Decimal(of) if count else Decimal(0)

    # every probe has the whole request's input size, so it is priced at the same tier
    read_cost = share(reads, calc(input_tokens=total_in, cache_read_tokens=total_in)["input_price"], total_in)
    write_cost = share(
        writes, calc(input_tokens=total_in, cache_write_tokens=total_in)["input_price"], total_in
    )
    reasoning_cost = share(
        reasoning,
        calc(input_tokens=total_in, output_tokens=reasoning, output_reasoning_tokens=reasoning)[
            "output_price"
        ],
        reasoning,
    )
    other = whole["total_price"] - whole["input_price"] - whole["output_price"]
    fresh_cost = whole["input_price"] - read_cost - write_cost + other
    output_cost = whole["output_price"] - reasoning_cost
    return Cost(
        float(fresh_cost),
        float(read_cost),
        float(write_cost),
        float(output_cost),
        float(reasoning_cost),
        currency="USD",
        source=genai_prices_source(),
    )


#: ``(provider, model)`` pairs genai-prices does not list (a miss is not looked up again)
_UNLISTED: set[tuple[str | None, str]] = set()


@functools.lru_cache(maxsize=1024)
def _model_price(provider: str | None, model: str, minute: int) -> Any:
    """genai-prices' price of ``model`` at that minute (prices change by date and, for some
    providers, by the time of day — never within a minute); ``None`` when it lacks the model."""
    if (provider, model) in _UNLISTED:
        return None
    gp = _genai_prices()
    when = _dt.datetime.fromtimestamp(minute * 60, _dt.UTC)
    try:
        found = gp.calc_price(
            gp.Usage(input_tokens=1), model, provider_id=provider, genai_request_timestamp=when
        )
    except LookupError:
        _UNLISTED.add((provider, model))
        return None
    return found.model_price


def has_price(
    model: str | None, *, provider: str | None = None, prices: Mapping[str, Price] | None = None
) -> bool:
    """Whether `price_request` can price ``model``."""
    from foldlog.log.grammar.types import Usage

    return price_request(Usage(prompt_tokens=1), model, provider=provider, prices=prices) is not None


def require_price(
    model: str | None, *, provider: str | None = None, prices: Mapping[str, Price] | None = None
) -> None:
    """Raise `ConfigError` unless ``model`` has a price (a cost limit needs one: a run it cannot
    price would pass its limit unseen)."""
    if has_price(model, provider=provider, prices=prices):
        return
    if _genai_prices() is None and model not in (prices or {}) and model not in FALLBACK_PRICES:
        raise ConfigError(
            f"Options.cost_limit needs prices for model {model!r}: install foldlog[cost] (genai-prices)"
            " or give the provider prices={...}"
        )
    raise ConfigError(
        f"Options.cost_limit is set but model {model!r} has no price (not in genai-prices"
        f"{f' for provider {provider!r}' if provider else ''}); give the provider prices={{...}} for it"
    )


__all__ = [
    "FALLBACK_PRICES",
    "Cost",
    "Price",
    "has_price",
    "price_request",
    "require_price",
    "sum_costs",
    "token_kinds",
    "whole_request_cost",
]
