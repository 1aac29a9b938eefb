"""B12's harness (`bench_compaction.py`) on two corpus transcripts, serial engine, not timed: it
imports them, runs tier 0 over the default grid and reads saved % and survival per strategy."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench_compaction
import workloads

if not (workloads.corpus_dir() / "claude-code-spotter").is_dir():  # pragma: no cover
    pytest.skip("the shared corpus is not available", allow_module_level=True)


def test_b12_runs_on_two_transcripts(tmp_path: Path) -> None:
    from foldlog.batch.grid import make_grid

    every = bench_compaction.transcripts(workloads.corpus_dir())
    formats = {fmt for fmt, _ in every}
    assert {"claude-code", "codex", "openai", "swe-agent", "openhands", "gemini", "aider"} <= formats
    # the smallest Claude Code and Codex sessions that fold at the default grid's 32k window
    picked = [
        min(
            (t for t in every if t[0] == fmt and t[1].stat().st_size > 200_000),
            key=lambda t: t[1].stat().st_size,
        )
        for fmt in ("claude-code", "codex")
    ]
    logs = bench_compaction.import_logs(picked, tmp_path / "logs")
    assert len(list(logs.glob("*.jsonl"))) == 2
    report = bench_compaction.compact_eval(logs, tmp_path / "r.csv", "serial", workers=1)
    assert report.summary["errors"] == 0
    names = bench_compaction.strategies() or ("mechanical",)
    assert len(report.rows) == 2 * len(make_grid()) * len(names)
    figures = bench_compaction.figures(report.summary)
    assert set(figures) == set(names)
    mech = figures["mechanical"]
    assert 0 < mech["saved_pct"] < 100 and mech["folded"] > 0
    assert mech["survival_artifact_pct"] is not None and mech["probes_artifact"] > 0
    # the report's B12 row reads what the bench records
    from report_data import Bench
    from report_rows import row_b12

    extra = {"row": "B12", "wall_with_ray_s": 30.0, "startup_s": 5.0, "strategies": figures, "workload": "w"}
    row = row_b12([Bench("test_b12_tier0", "B12", {}, 25.0, 25.0, 25.0, 1, extra)])
    assert row.met is True and row.workload == "w"
    assert any(line.startswith("mechanical: saved ") and "survival artifact" in line for line in row.ours)
