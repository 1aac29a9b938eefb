"""Request counts stay close to the prompt_tokens DeepSeek reported for recorded requests."""

from __future__ import annotations

from tests.tokens.prompt_error import rows


def test_recorded_deepseek_requests_are_counted_within_5_percent() -> None:
    table = rows()
    assert len(table) >= 8, "recorded DeepSeek requests with usage are missing from the corpus"
    for r in table:
        assert abs(r.counted - r.reported) <= max(1, 0.05 * r.reported), r
