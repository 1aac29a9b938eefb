"""``foldlog run``, ``chat`` and ``compact`` against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldlog.log.session import Session
from tests.cli.cli_testlib import fake_agent_args, run_cli
from tests.support.chat_server import ChatServer

USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 30,
    "total_tokens": 1230,
    "prompt_cache_hit_tokens": 900,
    "prompt_cache_miss_tokens": 300,
}


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("the secret word is pumpkin\n")
    return ws


def _serve(replies: list[dict[str, object]]) -> Iterator[ChatServer]:
    server = ChatServer(replies).start()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture()
def reading_model() -> Iterator[ChatServer]:
    """Reads hello.txt with a tool, then answers."""
    yield from _serve(
        [
            {
                "content": "Let me look.",
                "tool_calls": [("call_1", "read_file", '{"path": "hello.txt"}')],
                "usage": USAGE,
            },
            {"content": "The secret word is pumpkin.", "usage": USAGE},
        ]
    )


def test_run_streams_answer_tools_and_usage(
    tmp_path: Path, workspace: Path, reading_model: ChatServer
) -> None:
    proc = run_cli(
        "run", "What is the secret word?", *fake_agent_args(reading_model, workspace), home=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "Let me look." in proc.stdout and "The secret word is pumpkin." in proc.stdout
    assert "→ read_file" in proc.stderr and "hello.txt" in proc.stderr
    assert "← read_file" in proc.stderr and "pumpkin" in proc.stderr
    assert "usage: 2 request(s), 2400 prompt + 60 completion tokens, cache hit 75%" in proc.stderr
    # the second request carried the tool result: what the model saw is what the log derives
    second = reading_model.bodies[1]["messages"]
    assert second[-1]["role"] == "tool" and "pumpkin" in second[-1]["content"]
    logs = list((tmp_path / "sessions").glob("*.jsonl"))
    assert len(logs) == 1
    session = Session.load(logs[0])
    assert [m["role"] for m in session.derive_messages()] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
    ]
    assert session.events[-1]["type"] == "turn/end"


def test_run_json_and_continue(tmp_path: Path, workspace: Path, reading_model: ChatServer) -> None:
    proc = run_cli("run", "secret?", "--json", *fake_agent_args(reading_model, workspace), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [r["event"] for r in records]
    assert "ToolDispatch" in kinds and "ToolResult" in kinds and "TurnDone" in kinds
    result = records[-1]
    assert result["event"] == "Result" and result["exit_code"] == 0
    assert result["answer"] == "The secret word is pumpkin." and result["usage"]["requests"] == 2
    # --continue appends a second turn to the same log
    again = run_cli("run", "and again?", "-c", *fake_agent_args(reading_model, workspace), home=tmp_path)
    assert again.returncode == 0, again.stderr
    session = Session.load(result["path"])
    assert sum(1 for ev in session.events if ev["type"] == "turn/start") == 2
    assert reading_model.bodies[-1]["messages"][1]["content"] == "secret?"


def test_usage_line_counts_every_request_sent(tmp_path: Path, workspace: Path) -> None:
    """A retried HTTP error and replies without usage are requests too (issue 14: "3 request(s)"
    for a run that made 5 — the line counted usage reports, not requests)."""
    replies: list[dict[str, object]] = [
        {"status": 503},  # retried by the provider
        {"content": "", "tool_calls": [("c1", "read_file", '{"path": "hello.txt"}')], "usage": USAGE},
        {"content": "", "tool_calls": [("c2", "list_dir", "{}")], "usage": None},  # no usage sent
        {"content": "The secret word is pumpkin.", "usage": None},
    ]
    for server in _serve(replies):
        proc = run_cli("run", "secret?", *fake_agent_args(server, workspace), home=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert len(server.requests) == 4
        assert "usage: 4 request(s), 1200 prompt + 30 completion tokens" in proc.stderr
    for server in _serve(replies):
        proc = run_cli("run", "secret?", "--json", *fake_agent_args(server, workspace), home=tmp_path)
        assert proc.returncode == 0, proc.stderr
        result = json.loads(proc.stdout.splitlines()[-1])
        assert result["usage"]["requests"] == len(server.requests) == 4


def test_usage_line_without_a_request_counter_counts_every_usage_source() -> None:
    import io

    from foldlog.cli.live import LiveSink
    from foldlog.events import Usage, UsageSource

    sink = LiveSink(out=io.StringIO(), err=io.StringIO())
    sources: tuple[UsageSource, ...] = ("executor", "subagent", "subagent", "compaction", "executor")
    for source in sources:
        sink(Usage(100, 10, source=source))
    assert sink.usage_line().startswith("usage: 5 request(s), 500 prompt + 50 completion tokens")


def test_run_max_steps_exit_3(tmp_path: Path, workspace: Path) -> None:
    for server in _serve([{"content": "", "tool_calls": [("c", "list_dir", "{}")]}]):
        proc = run_cli(
            "run", "loop forever", "--max-steps", "1", *fake_agent_args(server, workspace), home=tmp_path
        )
        assert proc.returncode == 3, proc.stderr
        assert "stopped" in proc.stderr


def test_run_provider_refusal_exit_1(tmp_path: Path, workspace: Path) -> None:
    for server in _serve([{"status": 401, "body": '{"error":{"message":"bad key"}}'}]):
        proc = run_cli("run", "hi", *fake_agent_args(server, workspace), home=tmp_path)
        assert proc.returncode == 1
        assert "AuthError" in proc.stderr or "401" in proc.stderr


def test_run_usage_errors(tmp_path: Path) -> None:
    proc = run_cli("run", "hi", "--provider", "openai-compatible", "--model", "m", home=tmp_path)
    assert proc.returncode == 2 and "--base-url" in proc.stderr
    proc = run_cli("run", "  ", home=tmp_path)
    assert proc.returncode == 2 and "empty" in proc.stderr


def test_chat_with_piped_commands(tmp_path: Path, workspace: Path, reading_model: ChatServer) -> None:
    export = tmp_path / "out.json"
    script = "\n".join(
        [
            "What is the secret word?",
            "/status",
            "/tokens",
            f"/export {export}",
            "/model fake-2",
            "/bogus",
            "/sessions",
            "/new",
            "/help",
            "/quit",
            "never sent",
        ]
    )
    proc = run_cli("chat", *fake_agent_args(reading_model, workspace), home=tmp_path, input=script + "\n")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "The secret word is pumpkin." in out
    assert "model    fake-1" in out and "context" in out and "%" in out
    assert "usage: 2 request(s)" in out
    assert "unknown command /bogus" in out and "/compact [focus]" in out
    assert "model set to fake-2" in out
    messages = json.loads(export.read_text())
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    assert len(list((tmp_path / "sessions").glob("*.jsonl"))) == 2  # /new started another
    assert all(r["messages"][-1].get("content") != "never sent" for r in reading_model.bodies)


def _four_long_turns(tmp_path: Path, args: list[str]) -> Path:
    """Four long questions in one session (run, then run -c); its log."""
    long = "word " * 400
    for i in range(4):
        extra = ["-c"] if i else []
        proc = run_cli("run", f"question {i} {long}", *extra, *args, home=tmp_path)
        assert proc.returncode == 0, proc.stderr
    (log,) = (tmp_path / "sessions").glob("*.jsonl")
    return log


def _long_answers(summary: str) -> list[dict[str, object]]:
    long = "word " * 400
    replies: list[dict[str, object]] = [{"content": f"answer {i}: {long}", "usage": USAGE} for i in range(4)]
    return [*replies, {"content": summary, "usage": USAGE}]


def test_compact_command(tmp_path: Path, workspace: Path) -> None:
    for server in _serve(_long_answers("Summary: the user asked four questions.")):
        log = _four_long_turns(tmp_path, fake_agent_args(server, workspace))
        before = Session.load(log)
        stored = log.read_bytes()
        dry = run_cli(
            "compact", str(log), "--dry-run", "--mechanical", "--context-window", "4000", home=tmp_path
        )
        assert dry.returncode == 0, dry.stderr
        assert "would fold" in dry.stdout
        assert log.read_bytes() == stored  # a dry run writes nothing
        proc = run_cli("compact", str(log), "--mechanical", "--context-window", "4000", home=tmp_path)
        assert proc.returncode == 0, proc.stderr
        after = Session.load(log)
        types = [ev["type"] for ev in after.events]
        assert "compaction/start" in types and "compaction/end" in types
        assert len(after.derive_messages()) < len(before.derive_messages())
        assert log.read_bytes().startswith(stored)  # appended, nothing rewritten
        assert "folded" in proc.stdout and "mechanical fold" in proc.stdout
        summary = next(ev for ev in after.events if ev["type"] == "compaction/summary")
        assert summary["data"]["mechanical"] is True


def test_compact_with_a_summary_call(tmp_path: Path, workspace: Path) -> None:
    for server in _serve(_long_answers("The user asked four questions about words.")):
        args = fake_agent_args(server, workspace)
        log = _four_long_turns(tmp_path, args)
        proc = run_cli(
            "compact",
            log.stem,
            "--focus",
            "the questions",
            "--context-window",
            "4000",
            *args[:6],
            home=tmp_path,
        )
        assert proc.returncode == 0, proc.stderr
        assert "into a summary" in proc.stdout
        summary_request = server.bodies[-1]
        assert not summary_request.get("tools") and "the questions" in json.dumps(summary_request)
        digest = [m for m in Session.load(log).derive_messages() if "four questions" in str(m.get("content"))]
        assert len(digest) == 1 and digest[0]["role"] == "user"


def test_ctrl_c_cancels_the_turn_exit_130(tmp_path: Path, workspace: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.cli.cli_testlib import cli_env

    for server in _serve([{"content": "too late", "delay": 20}]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "foldlog", "run", "take your time", *fake_agent_args(server, workspace)],
            cwd=tmp_path,
            env=cli_env(tmp_path),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.requests, "the request never reached the server"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        (log,) = (tmp_path / "sessions").glob("*.jsonl")
        events = Session.load(log).events
        ends = [ev for ev in events if ev["type"] == "turn/end"]
        assert ends and ends[-1]["data"]["reason"]["kind"] == "aborted"


def test_chat_model_command_moves_the_session_to_the_new_models_tokenizer(
    tmp_path: Path, workspace: Path
) -> None:
    """``/model`` changes what the requests name *and* the model the session counts with: the
    events written after it carry exact counts of the new model's tokenizer."""
    server = ChatServer([{"content": "hi there", "usage": USAGE}]).start()
    try:
        script = "/model deepseek-v4-flash\nhello\n/quit\n"
        proc = run_cli("chat", *fake_agent_args(server, workspace), home=tmp_path, input=script)
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert [r["model"] for r in server.bodies] == ["deepseek-v4-flash"]
    [log] = (tmp_path / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()[1:]]
    [user] = [e for e in events if e["type"] == "user/message"]
    assert "deepseek-v4" in user.get("tokens", {}), user
