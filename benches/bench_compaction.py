"""B12: what a fold keeps — tier 0 of the compaction benchmark (docs/compaction-benchmark.md) over
every corpus transcript foldlog imports (Claude Code, Codex, τ-bench, SWE-agent, OpenHands, Gemini
CLI, aider) × the default grid (`foldlog.batch.grid`), on Ray with 2 CPUs.

The transcripts are imported once by the batch ``import`` job into foldlog logs, cached (not
timed). The run is ``compact-eval --probes``: every session planned and folded at each grid point,
its probes generated from the folded part and scored against the surface the next request would
carry (survival: an upper bound on recall, never recall). Two times are reported: the run alone
on a cluster started before the clock (the median of the benchmark), and the wall time of the
whole thing with Ray's start and stop (``wall_with_ray_s``); the goal is ≤ 60 s on 2 cores.

Strategies: every one of compact-eval's ``strategies`` that needs no model (all but ``summary``,
or the comma list ``FOLDLOG_B12_STRATEGIES``); before compact-eval had strategies, its one fold
(``mechanical``).

pytest benches/bench_compaction.py --benchmark-json=b12.json
"""

from __future__ import annotations

import inspect
import os
import shutil
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from workloads import cache_dir

GROUP = "B12 compaction benchmark, tier 0"
#: the strategies tier 0 cannot run without a model (hybrid without one masks, then folds
#: mechanically)
NEEDS_MODEL = ("summary",)
BUDGET_S = 60.0


def transcripts(corpus: Path) -> list[tuple[str, Path]]:
    """Every corpus session file an importer covers, with its ``--from`` format; aider's full
    history (1,133 sessions) included. Claude Code subagent files are left out: they carry
    their parent's session id (the parent's log is the session measured)."""
    from tests.cli.cli_testlib import corpus_transcripts

    jobs = [(fmt, p) for fmt, p in corpus_transcripts(corpus) if "subagents" not in p.parts]
    history = corpus / "aider/chat-history.md"
    if history.exists():
        jobs.append(("aider", history))
    return jobs


def import_logs(sources: Sequence[tuple[str, Path]], logs: Path) -> Path:
    """``sources`` imported into ``logs`` (once: a complete folder is reused). Copies of one
    session (the corpus keeps a Claude Code session at successive turns) are imported once: the
    largest file first, the later copies skipped as existing."""
    from foldlog.batch import run_batch

    if (logs / ".complete").exists():
        return logs
    shutil.rmtree(logs, ignore_errors=True)
    by_format: dict[str, list[Path]] = {}
    for fmt, path in sources:
        by_format.setdefault(fmt, []).append(path)
    for fmt, paths in by_format.items():
        paths.sort(key=lambda p: -p.stat().st_size)
        report = run_batch(
            "import", [str(p) for p in paths], from_format=fmt, out=logs, engine="serial", progress=False
        )
        failed = [r for r in report.rows if r.get("error") and "OutputExistsError" not in str(r["error"])]
        assert not failed, (fmt, failed[:3])
    (logs / ".complete").touch()
    return logs


def corpus_logs() -> Path:
    """Every importable corpus transcript as foldlog logs (imported once, cached)."""
    from tests.conftest import shared_path

    return import_logs(transcripts(shared_path("corpus")), cache_dir() / "b12-corpus-logs")


def strategies() -> tuple[str, ...] | None:
    """The strategies to compare: ``FOLDLOG_B12_STRATEGIES`` (a comma list), else every one of
    compact-eval's that runs without a model; ``None`` when compact-eval has no strategies."""
    from foldlog.batch import run_batch

    if "strategies" not in inspect.signature(run_batch).parameters:
        return None
    env = os.environ.get("FOLDLOG_B12_STRATEGIES")
    if env:
        return tuple(s.strip() for s in env.split(",") if s.strip())
    from foldlog.compaction import settings

    return tuple(s for s in getattr(settings, "STRATEGIES", ("mechanical",)) if s not in NEEDS_MODEL)


def compact_eval(logs: Path, out: Path, engine: str, workers: int = 2) -> Any:
    """``compact-eval --probes`` over ``logs`` at the default grid."""
    from foldlog.batch import run_batch

    kw: dict[str, Any] = {}
    names = strategies()
    if names is not None:
        kw["strategies"] = names
    return run_batch(
        "compact-eval",
        [str(logs)],
        out=out,
        engine=engine,  # type: ignore[arg-type]
        workers=workers,
        probes=True,
        progress=False,
        **kw,
    )


def figures(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Per strategy: tokens saved (%) and survival per category (%), over every grid point."""
    out: dict[str, Any] = {}
    for s in summary["strategies"]:
        out[s["strategy"]] = {
            "saved_pct": s["saved_pct"],
            "saved_folded_pct": s["saved_folded_pct"],  # over the sessions it acted on
            "folded": s["folded"],
            "sessions": s["sessions"],
            **{k: v for k, v in s.items() if k.startswith(("survival_", "probes_", "recall_"))},
        }
    return out


@pytest.mark.timeout(1800)
def test_b12_tier0(benchmark: Any) -> None:
    from foldlog.batch.grid import make_grid
    from foldlog.batch.ray_engine import start

    logs = corpus_logs()
    n_logs = len(list(logs.glob("*.jsonl")))
    out = Path(tempfile.mkdtemp(prefix="foldlog-b12-"))
    rounds = iter(range(100))
    reports: list[Any] = []
    t0 = time.perf_counter()
    ray, _ = start(None, 2)
    startup = time.perf_counter() - t0

    def run() -> None:
        reports.append(compact_eval(logs, out / f"r{next(rounds)}.parquet", "ray"))

    try:
        benchmark.group = GROUP
        benchmark.pedantic(run, rounds=1, warmup_rounds=0)
    finally:
        t1 = time.perf_counter()
        ray.shutdown()
        shutdown = time.perf_counter() - t1
        shutil.rmtree(out, ignore_errors=True)
    report = reports[-1]
    assert report.summary["errors"] == 0
    run_s = benchmark.stats.stats.median
    grid = len(make_grid())
    names = strategies() or ("mechanical",)
    benchmark.extra_info.update(
        {
            "row": "B12",
            "sessions": n_logs,
            "rows": len(report.rows),
            "grid_points": grid,
            "run_s": run_s,
            "startup_s": startup,
            "wall_with_ray_s": startup + run_s + shutdown,
            "budget_s": BUDGET_S,
            "strategies": figures(report.summary),
            "workload": (
                f"{n_logs:,} imported corpus sessions × {grid} grid points × {len(names)} strategies"
                f" ({', '.join(names)}; {len(report.rows):,} rows), tier 0 probes, Ray with 2 CPUs"
            ),
        }
    )
