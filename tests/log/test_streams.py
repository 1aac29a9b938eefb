"""Reconnectable event streams: `session.stream.events_since`,
`session.stream.subscribe(fn, after_seq=N)` and ``foldlog log tail --follow`` (run as a process
while another process appends)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.errors import UnknownSeqError
from foldlog.log.forks import fork_session
from tests.cli.cli_testlib import cli_env


def _session(n: int) -> Session:
    s = Session(system="sys")
    for i in range(n - 1):
        s.add({"role": "user", "content": f"m{i}"})
    return s


def test_events_since_gives_what_a_reader_missed() -> None:
    s = _session(5)
    assert [e["seq"] for e in s.stream.events_since(-1)] == [0, 1, 2, 3, 4]
    assert [e["seq"] for e in s.stream.events_since(2)] == [3, 4]
    assert s.stream.events_since(4) == ()
    for bad in (5, -2):
        with pytest.raises(UnknownSeqError, match=f"after_seq {bad}"):
            s.stream.events_since(bad)


def test_subscribe_after_seq_replays_then_follows_live() -> None:
    s = _session(4)
    seen: list[int] = []
    stop = s.stream.subscribe(lambda e: seen.append(int(e["seq"])), after_seq=1)
    assert seen == [2, 3]  # the replay, before subscribe returns
    s.add({"role": "user", "content": "live"})
    assert seen == [2, 3, 4]
    stop()
    s.add({"role": "user", "content": "after unsubscribing"})
    assert seen == [2, 3, 4]
    live: list[int] = []
    s.stream.subscribe(lambda e: live.append(int(e["seq"])))  # no after_seq: from now on only
    s.add({"role": "user", "content": "x"})
    assert live == [6]
    with pytest.raises(UnknownSeqError):
        s.stream.subscribe(print, after_seq=99)


def test_resubscribing_during_concurrent_appends_loses_and_repeats_nothing() -> None:
    s = Session(system="sys")
    writers, per_writer = 4, 150
    total = writers * per_writer + 1  # and the system prompt
    delivered: dict[int, list[int]] = {}
    lock = threading.Lock()

    def write() -> None:
        for i in range(per_writer):
            s.add({"role": "user", "content": f"{threading.get_ident()}-{i}"})

    def reader(name: int) -> None:
        """Drops its connection every few events and resumes after the last seq it saw."""
        got: list[int] = []
        while len(got) < total:
            done = threading.Event()
            box: list[Any] = []

            def on_event(
                event: Mapping[str, Any], box: list[Any] = box, done: threading.Event = done
            ) -> None:
                if done.is_set():
                    return  # a UI that dropped its connection hears nothing more
                got.append(int(event["seq"]))
                if len(got) % 7 == 0:
                    done.set()

            box.append(s.stream.subscribe(on_event, after_seq=got[-1] if got else -1))
            done.wait(timeout=0.05)
            done.set()
            box[0]()  # once it returns, no delivery is running: ``got`` holds all it was given
        with lock:
            delivered[name] = got

    threads = [threading.Thread(target=write) for _ in range(writers)]
    threads += [threading.Thread(target=reader, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert len(delivered) == 3
    for name, got in delivered.items():
        assert got == list(range(total)), f"reader {name}: a gap or a duplicate"


def test_a_failing_subscriber_does_not_stop_the_stream() -> None:
    s = _session(2)
    seen: list[int] = []

    def flaky(event: Mapping[str, Any]) -> None:
        seen.append(int(event["seq"]))
        if event["seq"] == 1:
            raise RuntimeError("boom")

    s.stream.subscribe(flaky, after_seq=-1)
    s.add({"role": "user", "content": "next"})
    assert seen == [0, 1, 2]


_APPENDER = """
import sys, time
from foldlog import Session
s = Session.open(sys.argv[1])
for i in range(int(sys.argv[2])):
    s.add({"role": "user", "content": f"appended {i}"})
    s.flush()
s.close()
print("done", flush=True)
"""


def _read_lines(proc: subprocess.Popen[str], count: int) -> list[dict[str, Any]]:
    assert proc.stdout is not None
    out: list[dict[str, Any]] = []
    while len(out) < count:
        line = proc.stdout.readline()
        if not line:
            break
        out.append(json.loads(line))
    return out


def test_tail_follow_prints_each_event_once_while_another_process_appends(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.open(path, system="sys")
    for i in range(4):
        s.add({"role": "user", "content": f"before {i}"})
    s.close()
    env = cli_env(tmp_path / "home")
    tail = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "foldlog",
            "log",
            "tail",
            str(path),
            "--follow",
            "--from",
            "2",
            "--interval",
            "0.05",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        first = _read_lines(tail, 3)  # events 2..4, stored before it started
        assert [e["seq"] for e in first] == [2, 3, 4]
        appender = subprocess.run(
            [sys.executable, "-c", _APPENDER, str(path), "30"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert appender.returncode == 0, appender.stderr
        later = _read_lines(tail, 30)
        assert [e["seq"] for e in later] == list(range(5, 35))
        assert later[-1]["data"]["content"] == "appended 29"
    finally:
        tail.send_signal(signal.SIGTERM)
        _out, err = tail.communicate(timeout=60)
    assert tail.returncode == 0, err
    assert "Traceback" not in err


def test_tail_without_follow_and_a_fork(tmp_path: Path) -> None:
    s = Session.open(tmp_path, "p", system="sys")
    for i in range(12):
        s.add({"role": "user", "content": f"m{i}"})
    fork = fork_session(s, at_seq=5)
    fork.add({"role": "user", "content": "in the fork"})
    fork.close()
    s.close()
    env = cli_env(tmp_path / "home")
    run = [sys.executable, "-m", "foldlog", "log", "tail"]
    last = subprocess.run(
        [*run, str(tmp_path / "p.jsonl")], capture_output=True, text=True, env=env, timeout=60
    )
    assert [json.loads(x)["seq"] for x in last.stdout.splitlines()] == list(range(3, 13))
    assert fork.path is not None
    forked = subprocess.run(
        [*run, str(fork.path), "--from", "4"], capture_output=True, text=True, env=env, timeout=60
    )
    lines = [json.loads(x) for x in forked.stdout.splitlines()]
    assert [e["seq"] for e in lines] == [4, 5, 6] and lines[-1]["data"]["content"] == "in the fork"
    bad = subprocess.run(
        [*run, str(fork.path), "--from", "-1"], capture_output=True, text=True, env=env, timeout=60
    )
    assert bad.returncode != 0 and "--from -1" in bad.stderr
    assert os.environ.get("FOLDLOG_HOME") != str(tmp_path / "home")
