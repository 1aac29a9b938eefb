"""A two-node Ray cluster on this machine (``ray.cluster_utils.Cluster``, every node on
127.0.0.1): a worker node killed in the middle of a job, the job still completes — Ray reruns the
lost shards on the node left — with exactly the serial rows."""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldlog.batch import run_batch
from foldlog.batch.output import done_list_path
from foldlog.batch.ray_engine import LOOPBACK, loopback_env
from tests.batch.conftest import GRID


def _ray() -> Any:
    """Ray, untyped (its API has no annotations mypy --strict accepts)."""
    return importlib.import_module("ray")


@pytest.fixture(scope="module")
def two_nodes() -> Iterator[tuple[Any, list[Any]]]:
    """A head without CPUs (it schedules, runs nothing) and two worker nodes of 1 CPU each."""
    loopback_env()
    ray = _ray()
    from ray.cluster_utils import Cluster

    assert not ray.is_initialized(), "another Ray was already running in the test process"
    cluster: Any = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 0, "node_ip_address": LOOPBACK, "include_dashboard": False},
    )
    workers = [cluster.add_node(num_cpus=1, node_ip_address=LOOPBACK) for _ in range(2)]
    try:
        ray.init(address=cluster.address, log_to_driver=False, logging_level="warning")
        cluster.wait_for_nodes()
        yield cluster, workers
    finally:
        ray.shutdown()
        cluster.shutdown()


def _gone(node_id: str, timeout: float = 120) -> bool:
    """Whether the cluster marks the node dead (its health check notices within seconds)."""
    ray = _ray()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(n["NodeID"] == node_id and n["Alive"] for n in ray.nodes()):
            return True
        time.sleep(0.5)
    return False


def test_the_cluster_is_on_loopback(two_nodes: tuple[Any, list[Any]]) -> None:
    ray = _ray()

    alive = [n for n in ray.nodes() if n["Alive"]]
    assert len(alive) == 3 and {n["NodeManagerAddress"] for n in alive} == {LOOPBACK}


def test_a_worker_node_killed_mid_job_the_job_completes_with_the_serial_rows(
    two_nodes: tuple[Any, list[Any]],
    corpus_logs: Path,
    serial_results: dict[str, list[dict[str, Any]]],
    tmp_path: Path,
) -> None:
    cluster, workers = two_nodes
    out = tmp_path / "eval.jsonl"
    killed = threading.Event()

    def kill_after_the_first_shard() -> None:
        done = done_list_path(out)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if done.exists() and done.read_text().count("\n") >= 2:  # the header and one shard
                cluster.remove_node(workers[0], allow_graceful=False)
                killed.set()
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_after_the_first_shard, daemon=True)
    killer.start()
    report = run_batch("compact-eval", [str(corpus_logs)], out=out, engine="ray", points=GRID, shard_size=4)
    killer.join(timeout=5)
    assert killed.is_set(), "the job ended before a node could be killed"
    assert _gone(workers[0].node_id), "the killed node is dead in the cluster's view"
    assert report.summary["errors"] == 0, [r for r in report.rows if r["error"]][:3]
    assert report.rows == serial_results["compact-eval"]
