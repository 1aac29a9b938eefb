"""SIGTERM to ``foldlog run`` / ``foldlog chat`` behaves like Ctrl-C: the turn ends ``aborted``
with the partial text logged, and the process exits 143. Real child processes against the
loopback fake model, stopped mid-stream."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from foldlog.log.session import Session
from tests.cli.cli_testlib import cli_env, fake_agent_args
from tests.support.chat_server import ChatServer

PARTIAL = "The first half of a long answer"


def _stop_mid_stream(tmp_path: Path, verb_args: list[str], stdin: str | None) -> tuple[int, str, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = ChatServer([{"content": PARTIAL, "stall": 30}]).start()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "foldlog", *verb_args, *fake_agent_args(server, workspace)],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        if stdin is not None:
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            proc.stdin.flush()  # left open: chat waits for more input after the turn
        deadline = time.monotonic() + 60
        while not server.stalled and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.stalled, "the stream never reached the stall"
        time.sleep(0.5)  # the text sent before the stall reaches the client
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        server.close()
    (log,) = (tmp_path / "sessions").glob("*.jsonl")
    return proc.returncode, err, log


def _assert_aborted_with_partial_text(log: Path) -> None:
    events = Session.load(log).events  # loads: no torn tail, no repair
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["aborted"]
    replies = [e["data"] for e in events if e["type"] == "assistant/message"]
    assert len(replies) == 1 and replies[0]["interrupted"] is True
    assert replies[0]["message"]["content"] == PARTIAL
    starts = [e for e in events if e["type"] in ("step/start", "step/end")]
    assert [e["type"] for e in starts] == ["step/start", "step/end"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_to_run_cancels_the_turn_like_ctrl_c_exit_143(tmp_path: Path) -> None:
    code, err, log = _stop_mid_stream(tmp_path, ["run", "tell me everything"], None)
    assert code == 143, err
    assert "terminated" in err and "Traceback" not in err
    _assert_aborted_with_partial_text(log)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_to_chat_in_a_turn_cancels_it_and_ends_the_chat_exit_143(tmp_path: Path) -> None:
    code, err, log = _stop_mid_stream(tmp_path, ["chat"], "tell me everything\n")
    assert code == 143, err
    assert "Traceback" not in err
    _assert_aborted_with_partial_text(log)
