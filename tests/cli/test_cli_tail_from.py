"""Issue 26: ``foldlog log tail --from N`` past the log's end says so instead of printing nothing
with exit 0; the resume seq (one past the last) still prints nothing, cleanly."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from foldlog import Session
from tests.cli.cli_testlib import cli_env, run_cli


def _log(tmp_path: Path, messages: int) -> Path:
    with Session.open(tmp_path / "s.jsonl", system="sys") as s:
        for i in range(messages):
            s.add({"role": "user", "content": f"m{i}"})
    return tmp_path / "s.jsonl"


def test_from_past_the_end_names_the_last_seq(tmp_path: Path) -> None:
    path = _log(tmp_path, 12)  # seqs 0..12
    proc = run_cli("log", "tail", str(path), "--from", "9999", home=tmp_path)
    assert proc.returncode == 2, proc
    assert "--from 9999" in proc.stderr and "13 events (last seq 12)" in proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr


def test_from_one_past_the_end_is_the_resume_and_prints_nothing(tmp_path: Path) -> None:
    path = _log(tmp_path, 12)
    proc = run_cli("log", "tail", str(path), "--from", "13", home=tmp_path)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == "", proc
    last = run_cli("log", "tail", str(path), "--from", "12", home=tmp_path)
    assert last.returncode == 0 and [json.loads(x)["seq"] for x in last.stdout.splitlines()] == [12]


def test_from_past_the_end_of_an_empty_log(tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    Session.open(path).close()
    proc = run_cli("log", "tail", str(path), "--from", "3", home=tmp_path)
    assert proc.returncode == 2 and "has no events yet" in proc.stderr, proc


def test_follow_from_past_the_end_says_it_waits(tmp_path: Path) -> None:
    path = _log(tmp_path, 2)
    env = cli_env(tmp_path / "home")
    tail = subprocess.Popen(
        [sys.executable, "-m", "foldlog", "log", "tail", str(path), "--from", "50", "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert tail.stderr is not None
        line = tail.stderr.readline()
        assert "3 events (last seq 2); waiting for seq 50" in line, line
    finally:
        tail.send_signal(signal.SIGTERM)
        out, _err = tail.communicate(timeout=60)
    assert tail.returncode == 0 and out == ""
