"""A request is priced as one whole request by genai-prices: a tier keyed on the request's
input size (Claude Sonnet 4.5 above 200k input tokens) applies to all of its tokens, output and
cache included — not to each kind of token as if it were a request of its own (issue 26)."""

from __future__ import annotations

import math

import genai_prices as gp
import pytest

from foldlog.cost.prices import price_request
from foldlog.log.grammar.types import Usage

MODEL = "claude-sonnet-4-5"


def _whole(**counts: int) -> float:
    """genai-prices' own price of the whole request."""
    return float(gp.calc_price(gp.Usage(**counts), MODEL).total_price)


def test_a_long_request_prices_its_output_at_the_long_context_rate() -> None:
    # 300k input tokens put the whole request in Sonnet 4.5's long-context tier: its 22k output
    # tokens cost 22.5 USD per 1M (0.495 USD), not the base 15 (0.33 USD)
    cost = price_request(Usage(prompt_tokens=300_000, completion_tokens=22_000), MODEL)
    assert cost is not None
    assert math.isclose(cost.output, 0.495)
    assert math.isclose(cost.total, _whole(input_tokens=300_000, output_tokens=22_000))
    assert math.isclose(cost.total, 300_000 * 6 / 1e6 + 0.495)


@pytest.mark.parametrize("prompt", [150_000, 300_000])
def test_every_kind_is_priced_at_the_whole_requests_tier(prompt: int) -> None:
    reads, writes, completion, reasoning = prompt // 3, prompt // 6, 4_000, 1_000
    usage = Usage(
        prompt_tokens=prompt,
        cache_hit_tokens=reads,
        cache_write_tokens=writes,
        completion_tokens=completion,
        reasoning_tokens=reasoning,
    )
    cost = price_request(usage, MODEL)
    assert cost is not None
    whole = _whole(
        input_tokens=prompt,
        cache_read_tokens=reads,
        cache_write_tokens=writes,
        output_tokens=completion,
        output_reasoning_tokens=reasoning,
    )
    assert math.isclose(cost.total, whole)
    # the parts at the rates of the request's tier (USD per 1M: base / above 200k input)
    long = prompt > 200_000
    fresh = prompt - reads - writes
    assert math.isclose(cost.input, fresh * (6 if long else 3) / 1e6)
    assert math.isclose(cost.cache_read, reads * (0.6 if long else 0.3) / 1e6)
    assert math.isclose(cost.cache_write, writes * (7.5 if long else 3.75) / 1e6)
    rate_out = 22.5 if long else 15
    assert math.isclose(cost.output, (completion - reasoning) * rate_out / 1e6)
    assert math.isclose(cost.reasoning, reasoning * rate_out / 1e6)


def test_an_empty_usage_costs_nothing() -> None:
    cost = price_request(Usage(), MODEL)
    assert cost is not None and cost.total == 0.0
