"""Fixtures of the batch tests: the shared corpus imported once into foldlog logs (by the batch
``import`` job itself, serially), a small compact-eval grid, and the serial results every engine
must reproduce. The PostgreSQL server is the store tests' (a real server on loopback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foldlog.batch import GridPoint, run_batch
from tests.conftest import shared_path
from tests.stores.conftest import create_database, pg_server

__all__ = ["corpus_root", "create_database", "pg_server"]

#: what the corpus is imported from: (format, glob)
SOURCES = (
    ("claude-code", "claude-code-spotter/*.jsonl"),
    ("codex", "codex-localpush/*.jsonl"),
    ("openai", "tau-bench/gpt-4o-airline.json"),
)

#: two points that fold differently: a small window and tail, and a large tail with no keep policy
GRID: tuple[GridPoint, ...] = (GridPoint(16_000, 4_096, "errors"), GridPoint(32_000, 16_384, "none"))


def corpus_root() -> Path:
    """The shared corpus (a missing one fails the test, naming FOLDLOG_SHARED)."""
    return shared_path("corpus")


@pytest.fixture(scope="session")
def corpus_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of foldlog logs: every session of the corpus sources above."""
    root = corpus_root()
    logs = tmp_path_factory.mktemp("batch-corpus") / "logs"
    for fmt, pattern in SOURCES:
        report = run_batch("import", [str(root / pattern)], from_format=fmt, out=logs, engine="serial")
        assert report.summary["errors"] == 0, [r for r in report.rows if r["error"]][:3]
    assert len(list(logs.glob("*.jsonl"))) > 200
    return logs


@pytest.fixture(scope="session")
def serial_results(
    corpus_logs: Path, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, list[dict[str, Any]]]:
    """The serial engine's rows of each table job over the corpus: what every engine must give."""
    out = tmp_path_factory.mktemp("batch-serial")
    return {
        "stats": run_batch("stats", [str(corpus_logs)], out=out / "stats.jsonl", engine="serial").rows,
        "compact-eval": run_batch(
            "compact-eval", [str(corpus_logs)], out=out / "eval.jsonl", engine="serial", points=GRID
        ).rows,
    }
