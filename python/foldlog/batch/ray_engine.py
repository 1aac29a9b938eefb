"""The Ray engine: one Ray task per shard, results streamed back with ``ray.wait``.

Without an address, a local cluster is started on demand and stopped at the end, bound to
loopback: Ray resolves ``127.0.0.1`` as a node address to the machine's interface address
unless its multi-node support is off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read when Ray is
first imported), so `loopback_env` sets that before the import and the node is started with
``_node_ip_address="127.0.0.1"``. With ``address`` the driver joins that cluster (every node
needs foldlog installed, and the sources at the same paths or in the same database).

When Ray is already initialised in this process (a test's cluster, a notebook), that cluster is
used and left running. Tasks lost with their node are retried by Ray (``max_retries``); a shard
that still fails comes back as error rows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Any

from foldlog.batch.engines import OnShard, lost_shard, shards
from foldlog.batch.jobs import JobSpec, run_shard
from foldlog.batch.sources import Item
from foldlog.errors import ConfigError

LOOPBACK = "127.0.0.1"
#: retries of a shard whose worker or node died (Ray's system failures; a session's own error
#: is a row, never an exception)
MAX_RETRIES = 4


def loopback_env() -> None:
    """Keep a local Ray cluster's node address on 127.0.0.1 (see the module docstring). Call
    before Ray is imported; once it is, its constant is already read and set here too."""
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0":
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[attr-defined]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "the ray engine needs Ray: pip install 'foldlog[ray]' (or use --engine local)"
        ) from None
    return ray


def start(address: str | None, num_cpus: int | None) -> tuple[Any, bool]:
    """Ray, initialised; and whether this call started it (and so stops it)."""
    if address is None:
        loopback_env()
    ray = _ray()
    if ray.is_initialized():
        return ray, False
    common: dict[str, Any] = {"log_to_driver": False, "logging_level": "warning", "include_dashboard": False}
    if address is not None:
        ray.init(address=address, log_to_driver=False, logging_level="warning")
    else:
        ray.init(num_cpus=num_cpus, _node_ip_address=LOOPBACK, **common)
    return ray, True


def run_ray(
    spec: JobSpec,
    items: Sequence[Item],
    on_shard: OnShard,
    *,
    address: str | None = None,
    num_cpus: int | None = None,
    shard_size: int | None = None,
) -> None:
    """Run ``items`` in shards sized for the cluster's CPUs (`engines.shards`)."""
    ray, started = start(address, num_cpus)
    try:
        cpus = int(ray.cluster_resources().get("CPU", 1))
        parts = shards(items, cpus, shard_size)
        task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(run_shard)
        spec_ref = ray.put(spec)  # sent once to the object store, not with every task
        pending: dict[Any, list[Item]] = {task.remote(spec_ref, part): part for part in parts}
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                part = pending.pop(ref)
                try:
                    results = ray.get(ref)
                except Exception as exc:  # the shard failed past its retries (its nodes lost)
                    results = lost_shard(part, f"worker lost: {type(exc).__name__}: {exc}")
                on_shard(results)
    finally:
        if started:
            ray.shutdown()


__all__ = ["LOOPBACK", "MAX_RETRIES", "loopback_env", "run_ray", "start"]
