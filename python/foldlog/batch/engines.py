"""The engines that run a job's shards: ``serial`` (this process), ``local`` (a process pool on
this machine) and ``ray`` (`foldlog.batch.ray_engine`: a local cluster started on demand, or a
cluster at ``address``).

Each engine calls ``on_shard(results)`` in the driver as each shard comes back (in the order
they finish); a shard whose worker was lost for good comes back as error rows for its items, so
a job always ends with a row per item.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from typing import Literal

from foldlog.batch.jobs import JobSpec, Row, run_shard
from foldlog.batch.sources import Item
from foldlog.errors import ConfigError

EngineName = Literal["ray", "local", "serial"]
ENGINES: tuple[EngineName, ...] = ("ray", "local", "serial")
MAX_SHARD = 64

ShardResults = list[tuple[str, list[Row]]]
OnShard = Callable[[ShardResults], None]


def shards(items: Sequence[Item], workers: int, size: int | None = None) -> list[list[Item]]:
    """Split ``items`` in order into shards: ``size`` items each, else about four shards per
    worker (so a slow shard does not hold the end of the job), at most `MAX_SHARD` items."""
    if size is None:
        size = max(1, min(MAX_SHARD, math.ceil(len(items) / max(1, workers * 4))))
    elif size < 1:
        raise ConfigError(f"shard size must be at least 1, got {size}")
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


def lost_shard(shard: Sequence[Item], why: str) -> ShardResults:
    """The rows of a shard whose worker could not finish it (after the engine's retries)."""
    return [(item.key, [{"source": item.key, "index": 0, "session": None, "error": why}]) for item in shard]


def run_serial(spec: JobSpec, parts: Sequence[list[Item]], on_shard: OnShard) -> None:
    for part in parts:
        on_shard(run_shard(spec, part))


def run_local(spec: JobSpec, parts: Sequence[list[Item]], on_shard: OnShard, workers: int) -> None:
    """A process pool (spawned workers: nothing of the driver's state is inherited)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        futures = {pool.submit(run_shard, spec, part): part for part in parts}
        for future in as_completed(futures):
            try:
                results = future.result()
            except BrokenProcessPool as exc:
                results = lost_shard(futures[future], f"worker lost: {exc}")
            on_shard(results)


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


__all__ = [
    "ENGINES",
    "MAX_SHARD",
    "EngineName",
    "OnShard",
    "ShardResults",
    "default_workers",
    "lost_shard",
    "run_local",
    "run_serial",
    "shards",
]
