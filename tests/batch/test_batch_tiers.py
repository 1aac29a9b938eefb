"""compact-eval --reader / --judge: the recall and judge columns, the baseline on the unfolded
surface, the summary's loss (or why it cannot be measured), and a re-run answered from the cache."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from foldlog.batch import GridPoint, run_batch
from foldlog.batch.summary import table_text
from foldlog.compaction.probes import SCORED
from foldlog.errors import ConfigError
from foldlog.providers.scripted import Scripted
from tests.compaction.test_probes import _session
from tests.compaction.test_reader import echo_reader

POINT = GridPoint(4_000, 120, "none")


def echoing() -> Scripted:
    """The reader factory (module level: it pickles): right exactly when the answer is on the
    surface it reads."""
    return Scripted([echo_reader] * 50, model="echo", context_window=100_000)


def silent(model: str) -> Scripted:
    """A provider with no replies: any call it gets fails the row."""
    return Scripted([], model=model, context_window=100_000)


def judging() -> Scripted:
    reply = {
        "content": '{"accuracy": 4, "context_awareness": 4, "artifact_trail": 5, "completeness": 3, '
        '"continuity": 4, "instruction_following": 4}'
    }
    return Scripted([reply] * 4, model="judge", context_window=100_000)


def test_reader_recall_equals_survival_for_a_reader_that_reads_everything(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    _session().save(log)
    out = tmp_path / "r.jsonl"
    kw: dict[str, Any] = {"engine": "serial", "points": [POINT], "probes_per_prompt": 2, "replicates": 3}
    report = run_batch("compact-eval", [str(log)], out=out, reader=echoing, judge=judging, **kw)
    (row,) = report.rows
    assert row["error"] is None and row["folded"] > 0
    for c in SCORED:
        n = row[f"probes_{c}"]
        assert row[f"recall_{c}"] == (row[f"survived_{c}"] / n if n else None)
        assert row[f"recall_base_{c}"] == (1.0 if n else None)  # the unfolded surface has every answer
        assert row[f"recall_spread_{c}"] == (0.0 if n else None)
    assert row["baseline_cut"] is False and row["folded_cut"] is False
    assert row["judge_artifact_trail"] == 5.0 and row["judge_overall"] == pytest.approx(4.0)
    assert row["model_calls"] > 0 and row["model_cache_hits"] == 0
    assert (tmp_path / "r.jsonl.model-cache").is_dir()  # the cache beside the table
    # the mechanical digest names the identifiers too ("Identifiers seen"): nothing lost
    [ident] = [s for s in report.summary["recall"] if s["category"] == "identifier"]
    assert ident["recall_pct"] == 100.0 and ident["loss_points"] == 0.0 and ident["spread_points"] == 0.0
    text = table_text(report.summary)
    assert "mechanical/identifier  recall 100%, baseline 100%, loss 0.0 points" in text
    assert "judge scores (0-5):" in text and "artifact_trail 5.00" in text
    # a re-run into a new table sends nothing: every call is answered from the cache
    again = run_batch(
        "compact-eval",
        [str(log)],
        out=tmp_path / "again.jsonl",
        reader=partial(silent, "echo"),
        judge=partial(silent, "judge"),
        cache_dir=tmp_path / "r.jsonl.model-cache",
        **kw,
    )
    (row2,) = again.rows
    assert row2["error"] is None and row2["model_calls"] == 0
    assert row2["model_cache_hits"] == row["model_calls"]
    assert {k: v for k, v in row2.items() if k.startswith(("recall", "judge"))} == {
        k: v for k, v in row.items() if k.startswith(("recall", "judge"))
    }


def test_the_loss_is_baseline_minus_recall_with_its_spread() -> None:
    from foldlog.batch.summary import summarize

    rows = [
        {
            "source": f"s{k}",
            "error": None,
            "window": 1,
            "tail_tokens": 1,
            "keep_policy": "none",
            "recall_identifier": recall,
            "recall_base_identifier": 1.0,
            "recall_spread_identifier": spread,
            "folded_cut": False,
        }
        for k, (recall, spread) in enumerate([(0.5, 0.0), (0.25, 0.5)])
    ]
    [s] = summarize("compact-eval", rows)["recall"]
    assert s["measurable"] is True and s["recall_pct"] == 37.5 and s["loss_points"] == 62.5
    assert s["spread_points"] == 25.0
    text = table_text(summarize("compact-eval", rows))
    assert "mechanical/identifier  recall 38%, baseline 100%, loss 62.5 points" in text


def test_a_baseline_under_half_is_reported_as_not_measurable(tmp_path: Path) -> None:
    from foldlog.batch.summary import summarize

    row = {
        "source": "s",
        "error": None,
        "window": 1,
        "tail_tokens": 1,
        "keep_policy": "none",
        "recall_error": 0.1,
        "recall_base_error": 0.3,
        "recall_spread_error": 0.2,
        "folded_cut": True,
    }
    summary = summarize("compact-eval", [row])
    [s] = summary["recall"]
    assert s["measurable"] is False and s["loss_points"] is None
    text = table_text(summary)
    assert "baseline under 50%, this reader cannot measure what the fold lost here" in text
    assert "the folded surface too in 1 fold(s): the reader's window is smaller than the agent's" in text


def test_reader_options_are_checked_by_name(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--reader/--judge"):
        run_batch("stats", [], out=tmp_path / "s.jsonl", reader=echoing)
    with pytest.raises(ConfigError, match="--replicates"):
        run_batch("compact-eval", [], out=tmp_path / "s.jsonl", reader=echoing, replicates=0)


def test_the_cli_takes_the_tier_options_and_names_a_bad_one(capsys: pytest.CaptureFixture[str]) -> None:
    from foldlog.cli.main import build_parser

    argv = ["batch", "compact-eval", "s", "-o", "t.csv", "--reader", "local", "--judge", "deepseek"]
    args = build_parser().parse_args([*argv, "--replicates", "5", "--probes-per-prompt", "4", "--cache", "c"])
    assert (args.reader, args.judge, args.replicates, args.probes_per_prompt, args.cache) == (
        "local",
        "deepseek",
        5,
        4,
        "c",
    )
    for flag in ("--replicates", "--probes-per-prompt"):
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([*argv, flag, "0"])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert f"argument {flag}: " in err and "Traceback" not in err
