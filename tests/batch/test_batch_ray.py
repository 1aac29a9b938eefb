"""The Ray engine on a real local cluster (2 CPUs, one per module: Ray starts in seconds), bound
to loopback: every job gives exactly the serial engine's rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldlog.batch import read_table, run_batch
from foldlog.batch.jobs import JobName
from foldlog.batch.ray_engine import LOOPBACK, start
from foldlog.log.stats import log_stats
from tests.batch.conftest import GRID, SOURCES, corpus_root


@pytest.fixture(scope="module")
def ray_local() -> Iterator[Any]:
    """A local Ray cluster of 2 CPUs, as the engine starts one (`ray_engine.start`)."""
    ray, started = start(None, 2)
    assert started, "another Ray was already running in the test process"
    try:
        yield ray
    finally:
        ray.shutdown()


def test_the_local_cluster_is_bound_to_loopback(ray_local: Any) -> None:
    nodes = [n for n in ray_local.nodes() if n["Alive"]]
    assert len(nodes) == 1 and nodes[0]["NodeManagerAddress"] == LOOPBACK
    assert ray_local.cluster_resources()["CPU"] == 2
    assert ray_local.get_runtime_context().gcs_address.startswith(f"{LOOPBACK}:")


@pytest.mark.parametrize("job", ["stats", "compact-eval"])
def test_ray_gives_the_serial_rows(
    job: JobName,
    ray_local: Any,
    corpus_logs: Path,
    serial_results: dict[str, list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    out = tmp_path / "t.parquet"
    report = run_batch(job, [str(corpus_logs)], out=out, engine="ray", points=GRID)
    assert report.rows == serial_results[job]
    serial = run_batch(job, [str(corpus_logs)], out=tmp_path / "s.parquet", engine="serial", points=GRID)
    assert read_table(out) == read_table(serial.table)  # the Parquet files hold the same rows


def _without_paths(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in r.items() if k != "path"} for r in rows]


def test_ray_import_gives_the_serial_logs(ray_local: Any, tmp_path: Path) -> None:
    from foldlog import Session

    for fmt, pattern in SOURCES:
        src = [str(corpus_root() / pattern)]
        on_ray = run_batch("import", src, from_format=fmt, out=tmp_path / "ray", engine="ray")
        serial = run_batch("import", src, from_format=fmt, out=tmp_path / "serial", engine="serial")
        assert _without_paths(on_ray.rows) == _without_paths(serial.rows)
        assert on_ray.summary["errors"] == 0
    ray_logs = sorted((tmp_path / "ray").glob("*.jsonl"))
    assert [p.name for p in ray_logs] == [p.name for p in sorted((tmp_path / "serial").glob("*.jsonl"))]
    for p in ray_logs[:20]:
        a, b = Session.load(p), Session.load(tmp_path / "serial" / p.name)
        assert log_stats(a) == log_stats(b) and list(a.derive_messages()) == list(b.derive_messages())


def test_ray_export_gives_the_serial_files(ray_local: Any, corpus_logs: Path, tmp_path: Path) -> None:
    on_ray = run_batch("export", [str(corpus_logs)], out=tmp_path / "ray", engine="ray")
    serial = run_batch("export", [str(corpus_logs)], out=tmp_path / "serial", engine="serial")
    assert _without_paths(on_ray.rows) == _without_paths(serial.rows) and on_ray.summary["errors"] == 0
    for row in serial.rows:
        name = Path(row["path"]).name
        assert (tmp_path / "ray" / name).read_bytes() == Path(row["path"]).read_bytes()


def test_ray_rerun_skips_what_is_done(ray_local: Any, corpus_logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "s.csv"
    first = run_batch("stats", [str(corpus_logs)], out=out, engine="ray", shard_size=8)
    again = run_batch("stats", [str(corpus_logs)], out=out, engine="ray")
    assert again.ran == 0 and again.skipped == len(first.items) and again.rows == first.rows
