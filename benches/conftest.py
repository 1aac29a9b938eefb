"""Shared fixtures of the benchmark suite: the recorded workloads (built once, cached on disk).

Run a module with ``pytest benches/bench_<x>.py --benchmark-json=out.json``; ``scripts/bench.sh``
runs them all on the release build and writes ``docs/benchmarks.md``.
"""

from __future__ import annotations

import sys
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
