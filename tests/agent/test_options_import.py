from __future__ import annotations

import subprocess
import sys

import pytest

from foldlog import Options


def test_options_defaults_match_spec() -> None:
    o = Options()
    assert (o.grace_step, o.max_parallel_tools, o.tool_output_limit, o.tool_timeout) == (True, 8, 32768, None)
    assert (o.soft_compact_ratio, o.compact_ratio, o.force_compact_ratio) == (0.5, 0.8, 0.9)
    assert (o.tail_tokens, o.min_recent_keep, o.pinned_user_turn_tokens, o.min_fold_tokens) == (
        16384,
        2,
        1500,
        400,
    )
    assert (o.summary_timeout, o.stuck_limit, o.prune_min_bytes, o.keep_policy) == (90.0, 2, 1024, "errors")
    assert o.summary_provider is None and o.archive_dir is None and o.context_window is None


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"max_steps": 0}, "max_steps"),
        ({"max_parallel_tools": 0}, "max_parallel_tools"),
        ({"keep_policy": "all"}, "keep_policy"),
        ({"compact_ratio": 0.95}, "ratios"),
        ({"tool_timeout": -1}, "tool_timeout"),
    ],
)
def test_options_reject_bad_values(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Options(**kwargs)  # type: ignore[arg-type]


def test_agent_import_stays_light() -> None:
    code = (
        "import sys, foldlog; foldlog.Agent; foldlog.tool; foldlog.Options; foldlog.providers.Scripted; "
        "import foldlog.events, foldlog.agent.subagent, foldlog.tools.builtin; "
        "print(sorted(m for m in ('httpx', 'rich', 'pydantic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
