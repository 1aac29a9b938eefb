"""``foldlog run --resume SESSION`` continues a session's unfinished turn (docs/durable-runs.md);
``foldlog approve`` is tested with the approvals (tests/agent/test_approvals.py)."""

from __future__ import annotations

from pathlib import Path

from foldlog.log.grammar.writer import EventWriter
from foldlog.log.session import Session
from tests.cli.cli_testlib import fake_agent_args, run_cli
from tests.support.chat_server import ChatServer


def cut_session(home: Path, sid: str) -> None:
    """A session whose process died in its first turn, after the prompt was stored."""
    session = Session(system="s", id=sid)
    w = EventWriter.on(session)
    w.turn_start(1)
    w.step_start(1, 1)
    w.user({"role": "user", "content": "What is the secret word?"})
    (home / "sessions").mkdir(mode=0o700)
    session.save(home / "sessions" / f"{sid}.jsonl")


def test_run_resume_continues_the_cut_turn(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cut_session(tmp_path, "cut")
    server = ChatServer([{"content": "pumpkin"}]).start()
    try:
        proc = run_cli("run", "--resume", "cut", *fake_agent_args(server, workspace), home=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert "pumpkin" in proc.stdout
        # the request carried the stored prompt: the turn went on where it stopped
        assert server.bodies[0]["messages"][-1]["content"] == "What is the secret word?"
    finally:
        server.close()
    session = Session.load(tmp_path / "sessions" / "cut.jsonl")
    ends = [e["data"]["reason"]["kind"] for e in session.events if e["type"] == "turn/end"]
    starts = [e["data"] for e in session.events if e["type"] == "turn/start"]
    assert ends == ["interrupted", "completed"] and starts[-1] == {"turn": 1, "resumed": "interrupted"}
    # nothing left to continue: said so, exit 1
    again = run_cli("run", "--resume", "cut", *fake_agent_args(server, workspace), home=tmp_path)
    assert again.returncode == 1 and "no unfinished turn" in again.stderr


def test_run_resume_usage_errors(tmp_path: Path) -> None:
    proc = run_cli("run", "hi", "--resume", "x", home=tmp_path)
    assert proc.returncode == 2 and "--resume" in proc.stderr
    proc = run_cli("run", home=tmp_path)
    assert proc.returncode == 2 and "prompt" in proc.stderr
    proc = run_cli("run", "--resume", "no-such-session", home=tmp_path)
    assert proc.returncode == 1 and "no-such-session" in proc.stderr
    assert not (tmp_path / "sessions" / "no-such-session.jsonl").exists()  # never made up


def test_chat_resume_continues_this_session_s_cut_turn(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    cut_session(tmp_path, "cut")
    server = ChatServer([{"content": "pumpkin"}]).start()
    try:
        proc = run_cli(
            "chat",
            "--session",
            "cut",
            *fake_agent_args(server, workspace),
            home=tmp_path,
            input="/resume\n/quit\n",
        )
        assert proc.returncode == 0, proc.stderr
        assert "pumpkin" in proc.stdout
        assert server.bodies[0]["messages"][-1]["content"] == "What is the secret word?"
    finally:
        server.close()
    session = Session.load(tmp_path / "sessions" / "cut.jsonl")
    ends = [e["data"]["reason"]["kind"] for e in session.events if e["type"] == "turn/end"]
    assert ends == ["interrupted", "completed"]
