"""B11: batch jobs over stored sessions — sessions per second for ``stats`` and ``compact-eval``
over the corpus repeated to ≥ 10,000 sessions: serial, ``--engine local`` (2 processes) and Ray
on 2 CPUs (a local cluster, bound to loopback, started before the clock; its start-up is
reported apart).

The corpus (Claude Code, Codex and τ-bench transcripts) is imported once by the batch ``import``
job into foldlog logs, cached; the 10,000-session folder holds symlinks to them (the same bytes
read again, from the page cache: the work measured is the per-session CPU work, not the disk).
The imported logs carry no token counts, so every session is tokenized (DeepSeek V4), as an
imported archive is. compact-eval runs one grid point (32k window, 4k tail, keep errors).

``FOLDLOG_B11_SESSIONS`` (10000) sizes the run.

pytest benches/bench_batch.py --benchmark-json=b11.json
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from workloads import cache_dir

SESSIONS = int(os.environ.get("FOLDLOG_B11_SESSIONS", "10000"))
GROUP = "B11 batch jobs"
SOURCES = (
    ("claude-code", "claude-code-spotter/*.jsonl"),
    ("codex", "codex-localpush/*.jsonl"),
    ("openai", "tau-bench/gpt-4o-airline.json"),
)


def corpus_logs() -> Path:
    """The corpus as foldlog logs (imported once, cached)."""
    from foldlog.batch import run_batch
    from tests.conftest import shared_path

    logs = cache_dir() / "b11-corpus-logs"
    if not (logs / ".complete").exists():
        shutil.rmtree(logs, ignore_errors=True)
        for fmt, pattern in SOURCES:
            src = str(shared_path("corpus") / pattern)
            report = run_batch("import", [src], from_format=fmt, out=logs, engine="serial")
            assert report.summary["errors"] == 0
        (logs / ".complete").touch()
    return logs


@pytest.fixture(scope="module")
def many_sessions() -> Any:
    """A folder of ≥ SESSIONS logs: the corpus's logs linked again and again."""
    logs = sorted(corpus_logs().glob("*.jsonl"))
    root = Path(tempfile.mkdtemp(prefix="foldlog-b11-"))
    folder = root / "logs"
    folder.mkdir()
    copies = -(-SESSIONS // len(logs))
    for k in range(copies):
        for p in logs:
            (folder / f"{k:03d}-{p.name}").symlink_to(p)
    try:
        yield folder, len(logs), copies, sum(p.stat().st_size for p in logs) * copies
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.timeout(3600)
@pytest.mark.parametrize("engine", ["serial", "local", "ray"])
@pytest.mark.parametrize("job", ["stats", "compact-eval"])
def test_b11_batch(benchmark: Any, many_sessions: Any, job: str, engine: str) -> None:
    from foldlog.batch import GridPoint, run_batch
    from foldlog.batch.ray_engine import start

    folder, base, copies, size = many_sessions
    n = base * copies
    out = Path(tempfile.mkdtemp(prefix="foldlog-b11-out-"))
    startup = 0.0
    ray = None
    if engine == "ray":
        t0 = time.perf_counter()
        ray, _ = start(None, 2)
        startup = time.perf_counter() - t0
    rounds = iter(range(100))
    reports: list[Any] = []

    def run() -> None:
        reports.append(
            run_batch(
                job,  # type: ignore[arg-type]
                [str(folder)],
                out=out / f"r{next(rounds)}.jsonl",
                engine=engine,  # type: ignore[arg-type]
                workers=2,
                points=[GridPoint(32_000, 4_096, "errors")],
                progress=False,
            )
        )

    try:
        benchmark.group = GROUP
        benchmark.pedantic(run, rounds=1, warmup_rounds=0)
    finally:
        if ray is not None:
            ray.shutdown()
        shutil.rmtree(out, ignore_errors=True)
    report = reports[-1]
    assert report.summary["errors"] == 0 and len(report.items) == n
    benchmark.extra_info.update(
        {
            "row": "B11",
            "job": job,
            "engine": engine,
            "sessions": n,
            "bytes": size,
            "rows": len(report.rows),
            "sessions_per_s": n / benchmark.stats.stats.median,
            "startup_s": startup,
            "workload": (
                f"{n:,} sessions: the corpus's {base} imported transcripts × {copies} "
                f"({size / 1e9:.2f} GB of logs), 2 workers"
            ),
        }
    )
