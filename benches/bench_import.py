"""B6: ``import foldlog`` time in a fresh interpreter (``python -X importtime``), against peers.

pytest benches/bench_import.py --benchmark-only
python benches/bench_import.py [--runs 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys
from typing import Any

import pytest

MODULES = ("foldlog", "foldlog.agent", "agents", "pydantic_ai", "langchain_core.messages")


def import_time_ms(module: str) -> float:
    """Cumulative import time of ``module`` as ``-X importtime`` reports it, in a new process."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=True,
    )
    for line in reversed(proc.stderr.splitlines()):
        parts = [p.strip() for p in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise RuntimeError(f"no importtime line for {module}:\n{proc.stderr[-2000:]}")


def wall_ms(module: str) -> float:
    """Whole interpreter start + import, for context (``-X importtime`` excludes interpreter start)."""
    code = f"import time; t=time.perf_counter(); import {module}; print((time.perf_counter()-t)*1000)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


@pytest.mark.parametrize("module", MODULES)
def test_b6_import_time(benchmark: Any, module: str) -> None:
    if importlib.util.find_spec(module.split(".")[0]) is None:
        pytest.skip(f"{module} is not installed (bench dependency group)")
    import_time_ms(module)  # warm the page cache and bytecode
    result = benchmark.pedantic(import_time_ms, args=(module,), rounds=7, iterations=1)
    benchmark.extra_info["importtime_ms"] = result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    args = ap.parse_args()
    print("| module | import ms (median of -X importtime cumulative) | min–max |")
    print("|---|---:|---:|")
    base = None
    for module in MODULES:
        if importlib.util.find_spec(module.split(".")[0]) is None:
            print(f"| {module} | not installed | |")
            continue
        import_time_ms(module)
        times = [import_time_ms(module) for _ in range(args.runs)]
        med = statistics.median(times)
        base = base or med
        print(f"| {module} | {med:.1f} | {min(times):.1f}–{max(times):.1f} | ({med / base:.0f}x foldlog)")


if __name__ == "__main__":
    main()
