"""The CLI's MCP servers (``--mcp FILE``, ``[mcp.servers.NAME]`` in foldlog.toml, ``/tools``) and
typed answers (``foldlog run --output-schema``), against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from foldlog.log.session import Session
from tests.cli.cli_testlib import fake_agent_args, run_cli
from tests.support.chat_server import ChatServer

TIME_SERVER = str(Path(sys.executable).parent / "mcp-server-time")


def _time_config() -> dict[str, object]:
    assert Path(TIME_SERVER).is_file(), f"{TIME_SERVER} is missing: the test setup installs mcp-server-time"
    return {"command": TIME_SERVER, "args": ["--local-timezone", "UTC"]}


def test_run_with_an_mcp_file_calls_the_server(tmp_path: Path) -> None:
    mcp_file = tmp_path / "mcp.json"
    mcp_file.write_text(json.dumps({"mcpServers": {"time": _time_config()}}))
    server = ChatServer(
        [
            {"tool_calls": [("c1", "get_current_time", '{"timezone": "UTC"}')]},
            {"content": "It is now."},
        ]
    ).start()
    try:
        proc = run_cli(
            "run",
            "what time is it?",
            "--mcp",
            str(mcp_file),
            *fake_agent_args(server, tmp_path),
            home=tmp_path,
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert "It is now." in proc.stdout
    offered = {t["function"]["name"] for t in server.bodies[0]["tools"]}
    assert {"get_current_time", "convert_time", "read_file"} <= offered
    (log,) = (tmp_path / "sessions").glob("*.jsonl")
    session = Session.open(log)
    (result,) = (e["data"]["message"] for e in session.events if e["type"] == "tool/result")
    assert not result["isError"] and '"timezone": "UTC"' in result["content"]
    session.close()


def test_a_bad_mcp_file_and_a_server_that_cannot_start_are_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"servers": {}}')
    proc = run_cli(
        "run",
        "hi",
        "--mcp",
        str(bad),
        "--provider",
        "openai-compatible",
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        home=tmp_path,
    )
    assert proc.returncode != 0 and '"mcpServers"' in proc.stderr
    ghost = tmp_path / "ghost.json"
    ghost.write_text(json.dumps({"mcpServers": {"ghost": {"command": "/nonexistent/server"}}}))
    server = ChatServer([{"content": "never"}]).start()
    try:
        proc = run_cli("run", "hi", "--mcp", str(ghost), *fake_agent_args(server, tmp_path), home=tmp_path)
    finally:
        server.close()
    assert proc.returncode == 1
    assert "MCP server 'ghost'" in proc.stderr and "could not start" in proc.stderr
    assert not server.requests  # failed at the start, before any request


def test_chat_tools_lists_each_tool_with_its_server_from_foldlog_toml(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "foldlog.toml").write_text(
        f'[mcp.servers.time]\ncommand = "{TIME_SERVER}"\nargs = ["--local-timezone", "UTC"]\n'
    )
    server = ChatServer([{"content": "hi"}]).start()
    try:
        proc = run_cli(
            "chat", *fake_agent_args(server, project), home=tmp_path, cwd=project, input="/tools\n/quit\n"
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any("get_current_time" in line and "MCP time" in line and "read-only" in line for line in lines)
    assert any("read_file" in line and "built-in" in line for line in lines)


def test_run_output_schema_prints_the_validated_json(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(
        json.dumps(
            {
                "type": "object",
                "properties": {"city": {"type": "string"}, "rank": {"type": "integer"}},
                "required": ["city", "rank"],
                "additionalProperties": False,
            }
        )
    )
    server = ChatServer(
        [
            {"tool_calls": [("c1", "final_answer", '{"city": "Oslo", "rank": "first"}')]},
            {"tool_calls": [("c2", "final_answer", '{"city": "Oslo", "rank": 1}')]},
        ]
    ).start()
    try:
        proc = run_cli(
            "run",
            "best city?",
            "--output-schema",
            str(schema),
            *fake_agent_args(server, tmp_path),
            home=tmp_path,
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"city": "Oslo", "rank": 1}
    assert "final_answer" in {t["function"]["name"] for t in server.bodies[0]["tools"]}
    bad = tmp_path / "not-json.json"
    bad.write_text("{")
    proc = run_cli("run", "x", "--output-schema", str(bad), *fake_agent_args(server, tmp_path), home=tmp_path)
    assert proc.returncode == 2 and "--output-schema" in proc.stderr and "not valid JSON" in proc.stderr
