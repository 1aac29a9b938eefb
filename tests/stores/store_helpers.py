"""Helpers of the store tests that run other processes (kept out of conftest.py so that test
modules import them by a name no other conftest can shadow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
WORKER = "tests.stores.store_worker"  # run as a module from the repository root


# the workers started by the running test: `stop_workers` ends them and closes their pipes after it
_started: list[subprocess.Popen[str]] = []


def start_worker(spec: dict[str, Any], command: str, **args: Any) -> subprocess.Popen[str]:
    """Run ``store_worker.py`` in a new process; it talks JSON lines on stdout/stdin."""
    proc = subprocess.Popen(
        [sys.executable, "-m", WORKER, json.dumps(spec), command, json.dumps(args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(REPO),
    )
    _started.append(proc)
    return proc


def stop_workers() -> None:
    """Kill the workers still running and close every worker's pipes (left to the garbage
    collector, each would be a ResourceWarning, an error under the suite's warning filter)."""
    while _started:
        proc = _started.pop()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()


def read_message(proc: subprocess.Popen[str]) -> dict[str, Any]:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        err = proc.stderr.read() if proc.stderr else ""
        raise AssertionError(f"worker exited (code {proc.wait()}) without answering:\n{err}")
    msg: dict[str, Any] = json.loads(line)
    return msg
