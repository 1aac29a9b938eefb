"""Starting the MCP servers the tests talk to: real ones installed from PyPI by the test setup
(``mcp-server-time``, ``mcp-server-git``), one written with the SDK's MCPServer (FastMCP) served
over streamable HTTP on loopback, and the misbehaving ones of ``servers/``."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from foldlog.mcp import MCPServer
from foldlog.providers.scripted import Scripted

SERVERS = Path(__file__).parent / "servers"
BIN = Path(sys.executable).parent


def installed(command: str) -> str:
    """A console script of the test venv; a test that needs a missing one fails saying why."""
    path = BIN / command
    assert path.is_file(), f"{path} is missing: the test setup installs it (the `test` dependency group)"
    return str(path)


def time_server(name: str = "time", **kw: Any) -> MCPServer:
    # a fixed local timezone: the server then never asks the system (or the network) for one
    return MCPServer.stdio(installed("mcp-server-time"), ["--local-timezone", "UTC"], name=name, **kw)


def git_server(repo: Path, **kw: Any) -> MCPServer:
    return MCPServer.stdio(installed("mcp-server-git"), ["--repository", str(repo)], name="git", **kw)


def fault_server(*args: str, **kw: Any) -> MCPServer:
    kw.setdefault("name", "faults")
    return MCPServer.stdio(sys.executable, [str(SERVERS / "fault_server.py"), *args], **kw)


def raw_server(mode: str, *args: str, **kw: Any) -> MCPServer:
    kw.setdefault("name", "raw")
    return MCPServer.stdio(sys.executable, [str(SERVERS / "raw_server.py"), mode, *args], **kw)


def make_repo(folder: Path) -> Path:
    """A git repository with two commits and an unstaged change."""
    folder.mkdir(parents=True, exist_ok=True)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "tests@example.invalid")
    git("config", "user.name", "Tests")
    (folder / "README.md").write_text("first\n")
    git("add", "README.md")
    git("commit", "-q", "-m", "first commit")
    (folder / "README.md").write_text("first\nsecond\n")
    git("commit", "-q", "-am", "second commit: a line more")
    (folder / "README.md").write_text("first\nsecond\nthird, not staged\n")
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def serve_notes_http() -> Iterator[str]:
    """The FastMCP notes server on a free loopback port; its endpoint URL."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVERS / "notes_http.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
                raise AssertionError(f"the FastMCP HTTP server exited with {proc.returncode}:\n{err[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("the FastMCP HTTP server did not listen within 60 s") from None
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()


def calls(*specs: tuple[str, dict[str, Any]], answer: str = "done") -> Scripted:
    """A scripted model that makes these calls in one step, then answers."""
    tool_calls = [{"id": f"c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(specs)]
    return Scripted([{"tool_calls": tool_calls}, {"content": answer}])


def steps(*batches: list[tuple[str, dict[str, Any]]], answer: str = "done") -> Scripted:
    """A scripted model that makes each batch of calls in a step of its own, then answers."""
    replies: list[Any] = [
        {"tool_calls": [{"id": f"s{k}c{i}", "name": n, "arguments": a} for i, (n, a) in enumerate(batch)]}
        for k, batch in enumerate(batches)
    ]
    return Scripted([*replies, {"content": answer}])


def results(session: Any) -> list[dict[str, Any]]:
    """The ``tool/result`` messages of a session, in order."""
    return [dict(e["data"]["message"]) for e in session.events if e["type"] == "tool/result"]
