"""Shared fixtures of the benchmark suite: the recorded workloads (built once, cached on disk).

Run a module with ``pytest benches/bench_<x>.py --benchmark-json=out.json``; ``scripts/bench.sh``
runs them all on the release build and writes ``docs/benchmarks.md``.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# bench modules import their siblings (workloads, pyload) and the tests' corpus helpers (tests.…)
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from workloads import Workload, log_100k, log_100mb


@pytest.fixture(scope="session")
def log_100mb_workload() -> Workload:
    return log_100mb()


@pytest.fixture(scope="session")
def log_100k_workload() -> Workload:
    return log_100k()


def start_mock_server(steps: int) -> tuple[subprocess.Popen[str], str]:
    """The loopback mock OpenAI-compatible server (`mock_openai.py`) in its own process."""
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("mock_openai.py")), "--steps", str(steps)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def mock_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """The mock server answering ``STEPS`` model calls a turn (the module's ``STEPS``)."""
    proc, url = start_mock_server(int(getattr(request.module, "STEPS", 20)))
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        if proc.stdout is not None:
            proc.stdout.close()  # the pipe the port came through (strict pytest fails on a leak)
