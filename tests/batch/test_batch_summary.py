"""compact-eval's summary and chart by strategy: tokens saved against probe survival (and recall,
with a reader) per category, for rows with a ``strategy`` column and rows from before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldlog.batch import GridPoint, run_batch
from foldlog.batch.summary import summarize, table_text, tradeoff, write_chart
from tests.compaction.test_probes import _session


def _row(strategy: str | None, before: int, after: int, **probes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "source": "s",
        "error": None,
        "window": 32_000,
        "tail_tokens": 4_096,
        "keep_policy": "errors",
        "triggered": True,
        "folded": 3,
        "tokens_before": before,
        "tokens_after": after,
    }
    if strategy is not None:
        row["strategy"] = strategy
    for c in ("artifact", "error", "constraint", "identifier"):
        row[f"probes_{c}"], row[f"survived_{c}"] = probes.get(c, (0, 0))
    row.update({k: v for k, v in probes.items() if k.startswith("recall")})
    return row


def test_summary_by_strategy_saved_against_survival_and_recall() -> None:
    rows = [
        _row(
            "mask", 1_000, 400, artifact=(4, 4), error=(2, 1), recall_artifact=0.5, recall_base_artifact=1.0
        ),
        _row("mask", 1_000, 200, artifact=(4, 2), recall_artifact=1.0, recall_base_artifact=1.0),
        _row("mechanical", 2_000, 500, artifact=(5, 5), recall_artifact=None),
    ]
    summary = summarize("compact-eval", rows)
    mask, mech = summary["strategies"]
    assert (mask["strategy"], mask["sessions"], mask["folded"]) == ("mask", 2, 2)
    assert mask["saved_pct"] == 70.0 and mech["saved_pct"] == 75.0
    assert (mask["probes_artifact"], mask["survived_artifact"], mask["survival_artifact_pct"]) == (8, 6, 75.0)
    assert mask["survival_error_pct"] == 50.0 and mask["survival_constraint_pct"] is None
    assert mask["recall_artifact_pct"] == 75.0 and mask["recall_base_artifact_pct"] == 100.0
    assert "recall_artifact_pct" not in mech  # no reader answered on its folds
    # grid points are kept apart by strategy, not summed across them
    assert [(p["strategy"], p["sessions"]) for p in summary["points"]] == [("mask", 2), ("mechanical", 1)]
    text = table_text(summary)
    assert "strategy" in text.splitlines()[1]
    assert "mask: saved 70.0% (70.0% where folded), 2/2 folded" in text
    assert "artifact 75% recall 75% (base 100%)" in text
    assert ("mask", "artifact", "recall", 70.0, 75.0) in tradeoff(summary)
    assert ("mechanical", "artifact", "survival", 75.0, 100.0) in tradeoff(summary)


def test_rows_without_a_strategy_column_are_the_mechanical_fold(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    _session().save(log)
    out = tmp_path / "r.csv"
    report = run_batch(
        "compact-eval",
        [str(log)],
        out=out,
        engine="serial",
        points=[GridPoint(4_000, 120, "none")],
        probes=True,
    )
    [s] = report.summary["strategies"]
    assert s["strategy"] == report.summary["points"][0]["strategy"] == "mechanical"
    assert s["survival_artifact_pct"] == 100.0 and s["saved_pct"] > 0
    text = table_text(report.summary)
    assert "strategy" not in text.splitlines()[1]  # one fold: no strategy column
    assert "mechanical: saved" in text
    # the chart gains the saved-against-kept panel: wider than the bars alone
    assert report.chart is not None
    bars = tmp_path / "bars.png"
    write_chart({**report.summary, "strategies": []}, bars)
    png = report.chart.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(png[16:20], "big") > int.from_bytes(bars.read_bytes()[16:20], "big")
