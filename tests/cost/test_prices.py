"""Recorded DeepSeek and OpenAI usage (the corpus) priced by genai-prices, against figures
computed by hand from the providers' published per-1M-token rates."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from foldlog.cost.prices import FALLBACK_PRICES, Cost, Price, has_price, price_request, token_kinds
from foldlog.errors import ConfigError
from foldlog.log.grammar.types import Usage
from foldlog.providers.http.assemble import parse_usage
from tests.conftest import shared_path


def _ms(text: str) -> int:
    return int(dt.datetime.fromisoformat(text).timestamp() * 1000)


#: DeepSeek's prices depend on the time of day (genai-prices keeps its off-peak and peak rates)
PEAK = _ms("2025-06-02T12:00:00+00:00")  # 00:30-16:30 UTC: standard price
OFF_PEAK = _ms("2025-06-02T20:00:00+00:00")


def _json_usage(*parts: str) -> dict[str, Any]:
    data = json.loads(shared_path("corpus", *parts).read_text(encoding="utf-8"))
    usage = data["usage"]
    assert isinstance(usage, dict)
    return usage


def _sse_usage(*parts: str) -> dict[str, Any]:
    usage: dict[str, Any] | None = None
    for line in shared_path("corpus", *parts).read_text(encoding="utf-8").splitlines():
        if line.startswith("data: {"):
            obj = json.loads(line[6:])
            usage = obj.get("usage") or usage
    assert usage is not None
    return usage


def _per_m(tokens: int, rate: float) -> float:
    return tokens * rate / 1e6


def test_deepseek_chat_cache_hits_langchaingo_peak_and_off_peak() -> None:
    u = parse_usage(_json_usage("langchaingo-httprr", "TestFunctionCall-synchronous-deepseek.response.json"))
    assert (u.prompt_tokens, u.cache_hit_tokens, u.cache_miss_tokens, u.completion_tokens) == (
        347,
        320,
        27,
        82,
    )
    peak = price_request(u, "deepseek-chat", provider="deepseek", time_ms=PEAK)
    assert peak is not None
    # standard: input 0.27, cache hit 0.07, output 1.10 USD per 1M
    assert peak.input == pytest.approx(_per_m(27, 0.27))
    assert peak.cache_read == pytest.approx(_per_m(320, 0.07))
    assert peak.output == pytest.approx(_per_m(82, 1.10))
    assert peak.cache_write == 0 and peak.reasoning == 0
    assert peak.total == pytest.approx(0.00011989)
    off = price_request(u, "deepseek-chat", provider="deepseek", time_ms=OFF_PEAK)
    assert off is not None  # off-peak: 0.135 / 0.035 / 0.55
    assert off.total == pytest.approx(_per_m(27, 0.135) + _per_m(320, 0.035) + _per_m(82, 0.55))
    assert off.currency == "USD" and off.source.startswith("genai-prices ")


def test_deepseek_streamed_usage_prices_like_the_json_one() -> None:
    u = parse_usage(_sse_usage("langchaingo-httprr", "TestFunctionCall-streaming-deepseek.response.sse"))
    cost = price_request(u, "deepseek-chat", provider="deepseek", time_ms=PEAK)
    assert cost is not None and u.completion_tokens == 74
    assert cost.total == pytest.approx(_per_m(27, 0.27) + _per_m(320, 0.07) + _per_m(74, 1.10))


def test_deepseek_reasoner_reasoning_tokens_priced_apart() -> None:
    u = parse_usage(
        _json_usage(
            "vercel-ai-sdk-fixtures", "HEAD", "packages", "deepseek", "src", "chat", "__fixtures__",
            "deepseek-reasoning.json",
        )
    )  # fmt: skip
    assert (u.prompt_tokens, u.completion_tokens, u.reasoning_tokens) == (18, 345, 315)
    assert token_kinds(u) == (18, 0, 0, 30, 315)
    cost = price_request(u, "deepseek-reasoner", provider="deepseek", time_ms=PEAK)
    assert cost is not None  # standard: input 0.55, output 2.19 (reasoning billed as output)
    assert cost.input == pytest.approx(_per_m(18, 0.55))
    assert cost.output == pytest.approx(_per_m(30, 2.19))
    assert cost.reasoning == pytest.approx(_per_m(315, 2.19))
    assert cost.total == pytest.approx(_per_m(18, 0.55) + _per_m(345, 2.19))


def test_deepseek_v4_flash_recorded_usage() -> None:
    u = parse_usage(
        _json_usage(
            "vercel-ai-sdk-fixtures", "readfile", "packages", "deepseek", "src", "chat", "__fixtures__",
            "issue-19789-live-usage.json",
        )
    )  # fmt: skip
    assert (u.prompt_tokens, u.cache_miss_tokens, u.completion_tokens, u.reasoning_tokens) == (88, 88, 4, 4)
    # before 2026-08-17 deepseek-v4-flash had one flat price: 0.14 in, 0.0028 cached, 0.28 out
    cost = price_request(
        u, "deepseek-v4-flash", provider="deepseek", time_ms=_ms("2026-05-01T12:00:00+00:00")
    )
    assert cost is not None
    assert cost.total == pytest.approx(_per_m(88, 0.14) + _per_m(4, 0.28))
    assert cost.reasoning == pytest.approx(_per_m(4, 0.28)) and cost.output == 0


def test_openai_o3_mini_and_gpt_4_1_nano() -> None:
    o3 = parse_usage(
        _json_usage("pydantic-ai-cassettes", "extracted", "test_openai_model_thinking_part__01.response.json")
    )
    assert (o3.prompt_tokens, o3.completion_tokens, o3.reasoning_tokens) == (577, 2320, 1792)
    cost = price_request(o3, "o3-mini-2025-01-31", provider="openai", time_ms=PEAK)
    assert cost is not None  # o3-mini: 1.10 in, 4.40 out
    assert cost.input == pytest.approx(_per_m(577, 1.10))
    assert cost.output + cost.reasoning == pytest.approx(_per_m(2320, 4.40))
    assert cost.reasoning == pytest.approx(_per_m(1792, 4.40))
    nano = parse_usage(
        _json_usage(
            "vercel-ai-sdk-fixtures",
            "HEAD",
            "packages",
            "openai",
            "src",
            "chat",
            "__fixtures__",
            "openai-text.json",
        )
    )
    cost = price_request(nano, "gpt-4.1-nano-2025-04-14", provider="openai", time_ms=PEAK)
    assert cost is not None  # gpt-4.1-nano: 0.10 in, 0.40 out
    assert cost.total == pytest.approx(_per_m(16, 0.10) + _per_m(363, 0.40))


def test_openai_cached_input_priced_at_the_cache_rate() -> None:
    u = Usage(prompt_tokens=10_000, completion_tokens=100, cache_hit_tokens=8_000, cache_miss_tokens=2_000)
    cost = price_request(u, "gpt-4o", provider="openai", time_ms=PEAK)
    assert cost is not None  # gpt-4o: 2.50 in, 1.25 cached, 10.00 out
    assert cost.input == pytest.approx(_per_m(2_000, 2.50))
    assert cost.cache_read == pytest.approx(_per_m(8_000, 1.25))
    assert cost.output == pytest.approx(_per_m(100, 10.0))


def test_cache_writes_priced_apart_with_own_prices() -> None:
    price = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    u = Usage(prompt_tokens=1_000, completion_tokens=10, cache_hit_tokens=600, cache_miss_tokens=400,
              cache_write_tokens=300)  # fmt: skip
    assert token_kinds(u) == (100, 600, 300, 10, 0)
    cost = price_request(u, "my-model", prices={"my-model": price})
    assert cost == Cost(
        input=_per_m(100, 3.0), cache_read=_per_m(600, 0.3), cache_write=_per_m(300, 3.75),
        output=_per_m(10, 15.0), reasoning=0.0, currency="USD", source="foldlog",
    )  # fmt: skip
    assert Cost.from_log(cost.to_log()) == cost
    assert cost.to_log()["total"] == pytest.approx(cost.total)


def test_the_fallback_table_holds_only_the_local_model() -> None:
    assert set(FALLBACK_PRICES) == {"gemma-3-270m"}
    cost = price_request(Usage(1000, 100), "gemma-3-270m")
    assert cost is not None and cost.total == 0.0
    import genai_prices

    with pytest.raises(LookupError):  # genai-prices does not know it: that is why it is kept
        genai_prices.calc_price(genai_prices.Usage(input_tokens=1), "gemma-3-270m")


def test_unknown_models_have_no_price() -> None:
    assert price_request(Usage(10, 10), "no-such-model-xyz", provider="openai") is None
    assert price_request(Usage(10, 10), None) is None
    assert not has_price("no-such-model-xyz")
    assert has_price("deepseek-v4-pro", provider="deepseek")


def test_require_price_names_the_model() -> None:
    from foldlog.cost.prices import require_price

    with pytest.raises(ConfigError, match="no-such-model-xyz"):
        require_price("no-such-model-xyz")
    require_price("gpt-4o", provider="openai")
