"""Privacy and safety end to end: the API key never reaches a file, the sink, a log record, the
console or an error; what foldlog writes is private (files 0600, folders 0700); the file tools
stay in their workspace and bash sees no credentials.

The model is a loopback OpenAI-compatible server that echoes the key back in its error bodies,
as real endpoints do ("Incorrect API key provided: sk-…"), so redaction is exercised, not
assumed. Each test first checks the key did reach the server, so a run that never sent it
cannot pass by accident.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
import subprocess
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.agent import Agent
from foldlog.errors import AuthError
from foldlog.providers.http.openai_compat import OpenAICompatible
from foldlog.providers.http.retry import RetryPolicy
from foldlog.stores import FileStore
from foldlog.tools.builtin import builtin_tools, scrubbed_env
from foldlog.tools.host import ToolLimits
from foldlog.tools.runner import ToolRunner
from tests.support.chat_server import ChatServer
from tests.support.http_server import LoopbackServer, Received

KEY = "sk-fl-PRIVACY-7f3c9e1d2b4a"
BEARER = f"Bearer {KEY}"


def _quoting(template: str) -> Callable[[Received], str]:
    """An error body that quotes the credentials its request carried, as real endpoints do."""

    def body(req: Received) -> str:
        auth = req.headers.get("authorization", "")
        token = auth.split()[-1] if auth else ""
        return json.dumps({"error": {"message": template.format(token=token, auth=auth)}})

    return body


def _auth(server: LoopbackServer) -> list[str]:
    """The Authorization header of each request the server got."""
    return [r.headers.get("authorization", "") for r in server.requests]


REPLY_5XX = {"status": 503, "body": _quoting("overloaded (request from key {token})")}
REPLY_401 = {
    "status": 401,
    "body": _quoting("Incorrect API key provided: {token}. You sent 'Authorization: {auth}'."),
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("the word is pumpkin\n")
    return ws


def _leaks(texts: dict[str, str]) -> list[str]:
    return [where for where, text in texts.items() if KEY in text or BEARER in text]


def _files_under(root: Path) -> dict[str, str]:
    out = {}
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():
            out[str(p)] = p.read_bytes().decode("utf-8", errors="replace")
    return out


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_an_agent_run_never_shows_the_key(
    tmp_path: Path, workspace: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, httpx and httpcore included
    server = ChatServer(
        [
            REPLY_5XX,  # retried
            {"content": "Let me look.", "tool_calls": [("call_1", "read_file", '{"path": "hello.txt"}')]},
            {"content": "The word is pumpkin."},
            REPLY_401,  # the second run: refused, never retried
        ]
    ).start()
    events: list[Any] = []
    errors: list[BaseException] = []
    store = FileStore(tmp_path / "home" / "sessions")
    try:
        provider = OpenAICompatible(server.base_url, KEY, "m", retry=RetryPolicy(base_delay=0.01))
        session = Session.open(store, "private", system="sys")
        agent = Agent(provider, builtin_tools(workspace), session, sink=events.append)

        async def main() -> str:
            answer = await agent.run("What is the word?")
            try:
                await agent.run("again")
            except AuthError as e:
                errors.append(e)
            await provider.aclose()
            return answer

        assert asyncio.run(main()) == "The word is pumpkin."
        session.close()
    finally:
        server.close()
    assert _auth(server) == [BEARER] * 4, "the key was sent as the Authorization header on every request"
    assert len(errors) == 1
    err = errors[0]
    assert "401" in str(err)
    seen = {
        "error str": str(err),
        "error repr": repr(err),
        "error traceback": "".join(traceback.format_exception(err)),
        "provider repr": repr(provider),
        "sink events": "\n".join(repr(e) for e in events),
        "log records": "\n".join(
            r.getMessage() + (logging.Formatter().formatException(r.exc_info) if r.exc_info else "")
            for r in caplog.records
        ),
        "console": "".join(capsys.readouterr()),
        **_files_under(tmp_path),
    }
    assert any("retry 1" in r.getMessage() and "HTTP 503" in r.getMessage() for r in caplog.records)
    assert any(r.name.startswith("httpx") or r.name.startswith("httpcore") for r in caplog.records)
    assert _leaks(seen) == []
    log_file = store.path_for("private")
    assert _mode(log_file) == 0o600 and _mode(log_file.with_suffix(".lock")) == 0o600
    assert _mode(log_file.parent) == 0o700 and _mode(log_file.parent.parent) == 0o700


def _cli(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY")}
    env.update(
        {
            "FOLDLOG_API_KEY": KEY,
            "FOLDLOG_HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"),
            "NO_COLOR": "1",
            "PYTHONIOENCODING": "utf-8",
        }
    )
    return subprocess.run(
        [sys.executable, "-m", "foldlog", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_cli_run_command_never_shows_the_key(tmp_path: Path, workspace: Path) -> None:
    server = ChatServer(
        [
            REPLY_5XX,
            # bash prints its whole environment: the key is in foldlog's, it must not be in the tool's
            {
                "content": "",
                "tool_calls": [("call_1", "bash", '{"command": "env; echo key=$FOLDLOG_API_KEY"}')],
            },
            {"content": "", "tool_calls": [("call_2", "read_file", '{"path": "hello.txt"}')]},
            {"content": "pumpkin"},
            REPLY_401,
        ]
    ).start()
    home = tmp_path / "home"
    agent_args = ["--provider", "openai-compatible", "--base-url", server.base_url, "--model", "m"]
    agent_args += ["--workspace", str(workspace)]
    try:
        ok = _cli(home, tmp_path, "run", "what is the word?", "--bash", "--json", *agent_args)
        refused = _cli(home, tmp_path, "run", "again", "-c", *agent_args)
    finally:
        server.close()
    assert ok.returncode == 0, ok.stderr
    assert refused.returncode == 1 and "401" in refused.stderr
    assert _auth(server) == [BEARER] * 5
    result = json.loads(ok.stdout.splitlines()[-1])
    assert result["answer"] == "pumpkin"
    session = Session.load(result["path"])
    bash_output = next(m["content"] for m in session.derive_messages() if m.get("tool_call_id") == "call_1")
    assert "exit code 0" in bash_output and "key=\n" in bash_output, "bash ran, without the key"
    seen = {
        "run stdout": ok.stdout,
        "run stderr": ok.stderr,
        "refused stdout": refused.stdout,
        "refused stderr": refused.stderr,
        **_files_under(tmp_path),
    }
    assert _leaks(seen) == []
    sessions = home / "sessions"
    assert _mode(sessions) == 0o700
    assert {_mode(p) for p in sessions.iterdir()} == {0o600}


def test_archives_and_their_folders_are_private(tmp_path: Path) -> None:
    from foldlog.compaction import write_archive

    path = Path(write_archive(tmp_path / "a" / "b", "s1", 1, [{"role": "user", "content": "x"}]))
    assert _mode(path) == 0o600
    assert _mode(tmp_path / "a") == 0o700 and _mode(tmp_path / "a" / "b") == 0o700


def test_saved_and_imported_logs_are_private(tmp_path: Path) -> None:
    s = Session(system="sys")
    s.save(tmp_path / "saved.jsonl")
    assert _mode(tmp_path / "saved.jsonl") == 0o600
    with Session.open(tmp_path / "new" / "deeper" / "s.jsonl") as w:
        w.add({"role": "user", "content": "x"})
    assert _mode(tmp_path / "new") == 0o700 and _mode(tmp_path / "new" / "deeper") == 0o700


def _run_tool(root: Path, name: str, args: dict[str, Any], **opts: bool) -> tuple[str, bool]:
    from foldlog import ToolRegistry
    from foldlog.log.grammar.types import ToolCall

    runner = ToolRunner(
        ToolRegistry(builtin_tools(root, **opts)),
        None,
        None,
        ToolLimits(max_parallel=1, output_limit=8192, timeout=None),
    )
    [r] = asyncio.run(runner.run_batch([ToolCall("c", name, json.dumps(args))]))
    assert isinstance(r.content, str)
    return r.content, r.is_error


@pytest.fixture
def escapes(tmp_path: Path) -> Iterator[Path]:
    """A workspace whose symlinks lead out: to a file, a folder, and a file that does not exist yet."""
    root = tmp_path / "ws"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    os.symlink(outside / "secret.txt", root / "file-link")
    os.symlink(outside, root / "dir-link")
    os.symlink(outside / "created-by-the-model.txt", root / "dangling")
    yield root
    assert sorted(x.name for x in outside.iterdir()) == ["secret.txt"], "nothing was written outside"
    assert (outside / "secret.txt").read_text() == "secret"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("write_file", {"path": "dangling", "content": "x"}),
        ("write_file", {"path": "dir-link/new.txt", "content": "x"}),
        ("edit_file", {"path": "file-link", "old": "secret", "new": "x"}),
        ("list_dir", {"path": "dir-link"}),
        ("grep", {"pattern": "secret", "path": "dir-link"}),
        ("grep", {"pattern": "secret", "path": "file-link"}),
        ("list_dir", {"path": "/"}),
        ("read_file", {"path": "../outside/secret.txt"}),
    ],
)
def test_file_tools_refuse_every_way_out(escapes: Path, tool: str, args: dict[str, Any]) -> None:
    content, is_error = _run_tool(escapes, tool, args, write=True)
    assert is_error and "WorkspaceError" in content, content
    assert "secret\n" not in content


def test_a_whole_workspace_grep_does_not_follow_links_out(escapes: Path) -> None:
    content, _ = _run_tool(escapes, "grep", {"pattern": "secret"})
    assert "secret.txt" not in content and ":1:secret" not in content


def test_bash_environment_has_no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    values = {
        "OPENAI_API_KEY": "v-openai",
        "MY_SERVICE_APIKEY": "v-apikey",
        "GITHUB_TOKEN": "v-token",
        "AWS_SECRET_ACCESS_KEY": "v-aws",
        "DB_PASSWORD": "v-password",
        "HTTP_AUTHORIZATION": "v-authorization",
    }
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("FOLDLOG_HARMLESS", "kept")
    env = scrubbed_env()
    assert not set(values) & set(env) and env["FOLDLOG_HARMLESS"] == "kept"
    out, is_error = _run_tool(tmp_path, "bash", {"command": "env"}, bash=True)
    assert not is_error and "FOLDLOG_HARMLESS=kept" in out
    assert not [v for v in values.values() if v in out]
