"""`run_batch`: collect the items, skip those the done-list has, run the rest on an engine with a
progress bar, then write the table, the summary and (compact-eval) the chart.

Outputs for ``out`` = ``results.parquet`` (or ``.csv``, ``.jsonl``): the table, its done-list
``results.parquet.done.jsonl``, the summary ``results.parquet.summary.json`` and, for
compact-eval, the chart ``results.parquet.png``. For ``import`` and ``export`` ``out`` is the
folder the files are written to; their table is ``<out>/.foldlog-batch/<job>.csv``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.batch import engines
from foldlog.batch.grid import GridPoint, make_grid
from foldlog.batch.jobs import JOBS, JobName, JobSpec, Row
from foldlog.batch.output import DoneList, check_table_path, done_list_path, write_table
from foldlog.batch.sources import Item, collect
from foldlog.batch.summary import summarize, write_chart
from foldlog.errors import ConfigError

if TYPE_CHECKING:
    from foldlog.providers.base import Provider


@dataclass(slots=True)
class BatchReport:
    """What a run did: every row (source order), the summary, and the files written."""

    job: str
    rows: list[Row]
    summary: dict[str, Any]
    table: Path
    done_list: Path
    summary_path: Path
    chart: Path | None = None
    ran: int = 0  # items run now
    skipped: int = 0  # items the done-list already had
    items: list[Item] = field(default_factory=list)


def table_path(job: str, out: Path) -> Path:
    if job in ("import", "export"):
        return out / ".foldlog-batch" / f"{job}.csv"
    return out


def fingerprint(spec: JobSpec) -> dict[str, Any]:
    """What makes two runs' rows comparable: a done-list is reused only by the same job."""
    fp: dict[str, Any] = {
        "job": spec.job,
        "model": spec.model,
        "grid": [[p.window, p.tail_tokens, p.keep_policy] for p in spec.grid],
        "summary": spec.summary_provider is not None,
        "export": [spec.export_format, spec.wire] if spec.job == "export" else None,
        "out": spec.out_dir,
    }
    if spec.job == "import":
        fp["branches"] = spec.branches  # forks written or not: a different set of logs
    if spec.probes:
        fp["probes"] = True  # rows with the survival columns
    if spec.strategies:
        fp["strategies"] = list(spec.strategies)  # one row per strategy
    if spec.reader is not None:  # rows with the recall columns, at these counts
        fp["reader"] = [spec.probes_per_prompt, spec.replicates]
    if spec.judge is not None:
        fp["judge"] = True
    return fp


def run_batch(
    job: JobName,
    sources: Sequence[str] = (),
    *,
    out: str | Path,
    engine: engines.EngineName = "ray",
    address: str | None = None,
    workers: int | None = None,
    from_format: str | None = None,
    dsn: str | None = None,
    model: str | None = None,
    points: Sequence[GridPoint] | None = None,
    summary_provider: Callable[[], Provider] | None = None,
    export_format: str = "openai",
    wire: bool = False,
    force: bool = False,
    branches: str = "current",
    shard_size: int | None = None,
    progress: bool | None = None,
    probes: bool = False,
    reader: Callable[[], Provider] | None = None,
    judge: Callable[[], Provider] | None = None,
    probes_per_prompt: int = 8,
    replicates: int = 3,
    cache_dir: str | Path | None = None,
    strategies: Sequence[str] = (),
) -> BatchReport:
    """Run ``job`` over ``sources`` (see `foldlog.batch.sources.collect`) and write its outputs.

    ``engine``: ``ray`` (a local cluster on demand, or the one at ``address``), ``local`` (a
    process pool of ``workers``) or ``serial``; all three write the same table. ``progress``:
    a bar on stderr (default: when stderr is a terminal). ``probes`` (compact-eval): add the
    probe survival columns ``probes_<c>`` / ``survived_<c>`` (docs/compaction-benchmark.md).
    ``strategies`` (compact-eval): the compaction strategies compared, one row each with its
    ``strategy`` column (default: ``summary`` with a summary provider, else ``mechanical``).
    Raises `ConfigError` for a bad argument before any work starts; a session that fails is a
    row with its ``error``.
    """
    if job not in JOBS:
        raise ConfigError(f"unknown batch job {job!r} (known: {', '.join(JOBS)})")
    if engine not in engines.ENGINES:
        raise ConfigError(f"unknown engine {engine!r} (known: {', '.join(engines.ENGINES)})")
    if address is not None and engine != "ray":
        raise ConfigError("--address names a Ray cluster: it needs --engine ray")
    if job == "import" and from_format is None:
        raise ConfigError("import converts foreign transcripts: give their format (--from)")
    if probes and job != "compact-eval":
        raise ConfigError(f"--probes measures what a fold keeps: it is a compact-eval option, not {job}'s")
    if strategies and job != "compact-eval":
        raise ConfigError(f"--strategies compares folds: it is a compact-eval option, not {job}'s")
    if (reader is not None or judge is not None) and job != "compact-eval":
        raise ConfigError(f"--reader/--judge score folds: compact-eval options, not {job}'s")
    if reader is not None or judge is not None:
        from foldlog.compaction.reader import check_counts

        check_counts(probes_per_prompt, replicates)
        probes = True  # tiers 1 and 2 ask the probes
        if cache_dir is None:  # beside the table: a re-run sends nothing
            cache_dir = table_path(job, Path(out)).with_name(Path(out).name + ".model-cache")
    from foldlog.interchange import BRANCHES

    if branches not in BRANCHES:
        raise ConfigError(f"branches={branches!r}: expected one of {', '.join(BRANCHES)}")
    out_path = Path(out)
    if job in ("import", "export") and out_path.suffix in (".parquet", ".csv", ".jsonl", ".json"):
        raise ConfigError(f"{job} writes files into a folder: -o names the folder, not {out_path.name}")
    table = table_path(job, out_path)
    check_table_path(table)
    spec = JobSpec(
        job=job,
        model=model,
        grid=tuple(points) if points is not None else (make_grid() if job == "compact-eval" else ()),
        summary_provider=summary_provider,
        out_dir=str(out_path) if job in ("import", "export") else None,
        export_format=export_format,
        wire=wire,
        force=force,
        branches=branches,
        probes=probes,
        reader=reader,
        judge=judge,
        probes_per_prompt=probes_per_prompt,
        replicates=replicates,
        cache_dir=str(cache_dir) if cache_dir is not None else None,
        strategies=tuple(strategies),  # type: ignore[arg-type]  # checked by JobSpec, naming the bad one
    )
    if job == "export":
        from foldlog.interchange.exports import suffix

        suffix(export_format)  # an unknown format fails now, not once per session
    items = collect(sources, from_format=from_format, dsn=dsn)
    done = DoneList(done_list_path(table), fingerprint(spec))
    todo = [item for item in items if not done.done(item.key)]
    n_workers = workers or engines.default_workers()
    if shard_size is not None and shard_size < 1:
        raise ConfigError(f"shard size must be at least 1, got {shard_size}")
    try:
        with _progress(len(todo), job, progress) as advance:

            def on_shard(results: engines.ShardResults) -> None:
                done.add(results)
                advance(len(results))

            if engine == "serial":
                engines.run_serial(spec, engines.shards(todo, 1, shard_size), on_shard)
            elif engine == "local":
                engines.run_local(spec, engines.shards(todo, n_workers, shard_size), on_shard, n_workers)
            elif todo:
                from foldlog.batch.ray_engine import run_ray

                run_ray(spec, todo, on_shard, address=address, num_cpus=workers, shard_size=shard_size)
    finally:
        done.close()
    rows = [row for item in items for row in done.rows.get(item.key, [])]
    write_table(table, rows)
    summary = summarize(job, rows)
    summary_path = table.with_name(table.name + ".summary.json")
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    chart = None
    if job == "compact-eval":
        chart = table.with_name(table.name + ".png")
        write_chart(summary, chart)
    return BatchReport(
        job,
        rows,
        summary,
        table,
        done.path,
        summary_path,
        chart,
        ran=len(todo),
        skipped=len(items) - len(todo),
        items=items,
    )


class _progress:
    """``advance(n)`` on a rich bar on stderr (or a no-op when there is no terminal)."""

    def __init__(self, total: int, job: str, show: bool | None) -> None:
        self.total, self.job = total, job
        self.show = sys.stderr.isatty() if show is None else show
        self._bar: Any = None

    def __enter__(self) -> Callable[[int], None]:
        if not self.show or not self.total:
            return lambda n: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._bar = Progress(
            TextColumn(f"batch {self.job}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._bar.__enter__()
        task = self._bar.add_task(self.job, total=self.total)
        return lambda n: self._bar.advance(task, n)

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(*exc)


__all__ = ["BatchReport", "fingerprint", "run_batch", "table_path"]
