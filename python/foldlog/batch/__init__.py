"""Batch work over stored sessions: ``stats``, ``compact-eval``, ``import`` and ``export`` across
many logs, on Ray (a local cluster on demand, or a cluster), a local process pool, or serially —
the same rows whichever runs them (docs/batch.md).

``run_batch(job, sources, out=…)`` is the API (`foldlog batch` the command); ``make_grid`` builds
compact-eval's points. Ray, pyarrow and matplotlib are optional (``foldlog[ray]``) and imported
only by the engine, the Parquet writer and the chart.
"""

from __future__ import annotations

from foldlog.batch.grid import GridPoint, load_toml, make_grid
from foldlog.batch.jobs import JOBS, JobSpec, run_item
from foldlog.batch.output import read_table
from foldlog.batch.run import BatchReport, run_batch
from foldlog.batch.sources import Item, collect

__all__ = [
    "JOBS",
    "BatchReport",
    "GridPoint",
    "Item",
    "JobSpec",
    "collect",
    "load_toml",
    "make_grid",
    "read_table",
    "run_batch",
    "run_item",
]
