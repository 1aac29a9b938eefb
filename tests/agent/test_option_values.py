"""Every bad option value is refused when `Options` / `CompactionSettings` is made, naming the
option — never accepted and failing later with an ``OverflowError`` naming nothing (issue 26)."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog import Options
from foldlog.compaction.settings import CompactionSettings
from foldlog.errors import ConfigError, ConfigTypeError

#: (option, bad value): negative, zero where it means nothing, wrong type, a bool for a number
BAD: list[tuple[str, Any]] = [
    ("tail_tokens", -5),
    ("context_window", -1),
    ("context_window", 0),
    ("min_recent_keep", -3),
    ("min_recent_keep", 0),
    ("pinned_user_turn_tokens", -1),
    ("min_fold_tokens", -1),
    ("prune_min_bytes", -1),
    ("stuck_limit", 0),
    ("summary_timeout", 0),
    ("summary_timeout", float("nan")),
    ("compact_ratio", float("nan")),
    ("max_steps", 0),
    ("max_parallel_tools", 0),
    ("tool_output_limit", 10),
    ("tool_timeout", -1.0),
    ("tool_argument_limit", 0),
    ("max_tokens", 0),
    ("temperature", -0.5),
    ("temperature", float("inf")),
    ("max_stream_retries", -1),
    ("cost_limit", -0.01),
    ("cost_limit", float("nan")),
    ("token_budget", -1),
    ("output_retries", -1),
    ("tail_tokens", 2**64),
    # wrong types
    ("tail_tokens", "16384"),
    ("tail_tokens", 1.5),
    ("context_window", True),
    ("min_recent_keep", False),
    ("max_steps", "50"),
    ("token_budget", 10.0),
    ("cost_limit", "1"),
    ("cost_limit", True),
    ("temperature", "hot"),
    ("grace_step", 1),
    ("model", 3),
]


@pytest.mark.parametrize(("name", "value"), BAD, ids=[f"{n}={v!r}" for n, v in BAD])
def test_options_refuse_a_bad_value_naming_it(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"Options\.{name}\b"):
        Options(**{name: value})


def test_a_wrong_type_is_a_config_type_error() -> None:
    with pytest.raises(ConfigTypeError, match=r"Options\.tail_tokens must be a whole number, got str"):
        Options(tail_tokens="10")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "value"),
    [("window", -1), ("tail_tokens", -5), ("min_recent_keep", -3), ("window", True), ("stuck_limit", 0)],
)
def test_compaction_settings_refuse_a_bad_value_naming_it(name: str, value: Any) -> None:
    with pytest.raises(ConfigError, match=rf"CompactionSettings\.{name}\b"):
        CompactionSettings(**{name: value})


def test_good_values_still_pass() -> None:
    o = Options(
        tail_tokens=0,
        context_window=8_000,
        min_recent_keep=1,
        max_steps=None,
        temperature=0,
        cost_limit=0,
        token_budget=0,
        summary_timeout=0.5,
        tool_timeout=None,
    )
    assert o.compaction().window == 8_000
    assert CompactionSettings(window=0).window == 0
