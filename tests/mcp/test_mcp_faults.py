"""Servers that misbehave: each fault gives an error result naming the server (the run goes
on), a dropped connection is opened again once, a server that cannot start fails the run at its
start with its stderr's tail, and a server's stderr goes to ``logging``, never to the console."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from foldlog import Agent, MCPError, Options
from foldlog.events import TurnStarted
from tests.mcp.mcp_helpers import calls, fault_server, raw_server, results, steps


def test_a_server_that_dies_mid_call_gives_an_error_result_and_is_started_again() -> None:
    server = fault_server()
    agent = Agent(
        steps([("echo", {"text": "before"})], [("crash", {})], [("echo", {"text": "after"})]), tools=[server]
    )
    agent.run_sync("crash it")
    before, crashed, after = results(agent.session)
    assert before["content"] == "before"
    assert crashed["isError"] and "MCP server 'faults'" in crashed["content"]
    assert "dropped the connection during crash" in crashed["content"]
    assert not after["isError"] and after["content"] == "after"
    assert server.restarts == 1


def test_a_dropped_connection_is_opened_again_once(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    server = raw_server("once", str(starts))
    provider = steps(*([("probe", {"n": n})] for n in range(3)))
    agent = Agent(provider, tools=[server])
    agent.run_sync("probe")
    died, restart, unavailable = results(agent.session)
    assert "dropped the connection" in died["content"]
    assert "could not start" in restart["content"] and "license was already used" in restart["content"]
    assert "MCP server 'raw' is unavailable" in unavailable["content"]
    assert starts.read_text().count("started") == 2  # the first start and one restart


def test_a_server_that_hangs_gives_an_error_result_naming_it() -> None:
    provider = steps([("hang", {})], [("echo", {"text": "still here"})])
    agent = Agent(provider, tools=[fault_server(timeout=1.0)])
    agent.run_sync("hang")
    hung, echoed = results(agent.session)
    assert hung["isError"] and hung["content"] == "error: MCP server 'faults' did not answer hang within 1 s"
    assert echoed["content"] == "still here"  # the connection stays usable


def test_a_reply_that_is_not_json_rpc_gives_an_error_result_naming_the_server() -> None:
    agent = Agent(calls(("probe", {})), tools=[raw_server("garbage", timeout=30.0)])
    agent.run_sync("probe")
    (result,) = results(agent.session)
    assert result["isError"]
    assert result["content"].startswith("error: MCP server 'raw' failed during probe: it sent a message")
    assert "not valid JSON-RPC" in result["content"]


def test_output_that_is_not_utf8_gives_an_error_result_naming_the_server() -> None:
    agent = Agent(calls(("probe", {})), tools=[raw_server("latin1", timeout=30.0)])
    agent.run_sync("probe")
    (result,) = results(agent.session)
    assert result["isError"]
    assert "MCP server 'raw'" in result["content"] and "not UTF-8" in result["content"]


def test_a_flood_is_capped_and_its_stderr_goes_to_the_log_not_the_console(
    capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="foldlog.mcp")
    agent = Agent(calls(("flood", {})), tools=[fault_server()], options=Options(tool_output_limit=4096))
    agent.run_sync("flood")
    (result,) = (e["data"] for e in agent.session.events if e["type"] == "tool/result")
    assert len(result["message"]["content"].encode()) < 4096 + 200
    assert result["meta"]["omittedBytes"] > 2_900_000
    out, err = capfd.readouterr()
    assert "flood line" not in out and "flood line" not in err
    logged = [r.getMessage() for r in caplog.records if r.name == "foldlog.mcp.faults"]
    assert "flood line 0 \ufffd" in logged  # Latin-1 on stderr, replaced
    assert sum(m.startswith("flood line") for m in logged) == 20000


def test_a_server_that_cannot_start_fails_the_run_at_its_start_with_its_stderr() -> None:
    seen: list[object] = []
    agent = Agent(calls(("echo", {"text": "x"})), tools=[fault_server("nostart")], sink=seen.append)
    with pytest.raises(MCPError) as info:
        agent.run_sync("hello")
    assert info.value.server == "faults"
    assert "could not start" in str(info.value)
    assert "cannot open the database /nonexistent/db" in info.value.stderr
    assert not any(isinstance(e, TurnStarted) for e in seen)
    assert not any(e["type"] == "turn/start" for e in agent.session.events)


def test_a_command_that_does_not_exist_fails_naming_it() -> None:
    from foldlog.mcp import MCPServer

    server = MCPServer.stdio("/nonexistent/mcp-server", name="ghost")
    with pytest.raises(MCPError, match=r"MCP server 'ghost' \(/nonexistent/mcp-server\) could not start"):
        asyncio.run(server.list_tools())
