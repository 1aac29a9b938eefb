"""Real MCP servers as tools: mcp-server-time and mcp-server-git (stdio, from PyPI) and a FastMCP
server over streamable HTTP on loopback, used alone and by agent runs (Scripted provider)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from foldlog import Agent, tool
from foldlog.mcp import MCPServer
from foldlog.providers.scripted import Scripted
from foldlog.tools.registry import ToolRegistry
from tests.mcp.mcp_helpers import calls, fault_server, git_server, make_repo, results, time_server


def test_time_server_alone_lists_its_tools_once_and_answers() -> None:
    async def go() -> tuple[list[Any], list[Any], Any, Any]:
        async with time_server() as server:
            first = await server.list_tools()
            again = await server.list_tools()
            ok = await server.call_tool("get_current_time", {"timezone": "Europe/Paris"})
            bad = await server.call_tool("get_current_time", {"timezone": "Not/AZone"})
            return first, again, ok, bad

    first, again, ok, bad = asyncio.run(go())
    assert again is first  # cached: listed once
    assert [t.name for t in first] == ["convert_time", "get_current_time"]
    assert all(t.read_only for t in first)  # readOnlyHint
    assert first[1].parameters["required"] == ["timezone"]
    assert not ok.is_error and json.loads(str(ok.content))["timezone"] == "Europe/Paris"
    assert bad.is_error and "Not/AZone" in str(bad.content)


def test_an_agent_calls_the_time_server_beside_an_ordinary_tool() -> None:
    @tool(read_only=True)
    def shout(text: str) -> str:
        """Upper-case it."""
        return text.upper()

    provider = calls(
        ("get_current_time", {"timezone": "UTC"}),
        ("convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        ("shout", {"text": "hi"}),
    )
    agent = Agent(provider, tools=[shout, time_server()])
    assert agent.run_sync("what time is it?") == "done"
    now, converted, shouted = results(agent.session)
    assert not now["isError"] and json.loads(now["content"])["timezone"] == "UTC"
    assert not converted["isError"] and "21:00" in converted["content"]  # Tokyo is UTC+9
    assert shouted["content"] == "HI"
    offered = [t["function"]["name"] for t in provider.requests[0].tools]
    assert offered == ["convert_time", "get_current_time", "shout"]
    assert agent.registry.owner("get_current_time") == "time" and agent.registry.owner("shout") is None


def test_an_agent_calls_the_git_server_over_a_temporary_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    provider = calls(
        ("git_status", {"repo_path": str(repo)}),
        ("git_log", {"repo_path": str(repo), "max_count": 5}),
        ("git_diff_unstaged", {"repo_path": str(repo)}),
    )
    agent = Agent(provider, tools=[git_server(repo)])
    agent.run_sync("what changed?")
    status, log, diff = results(agent.session)
    assert not status["isError"] and "README.md" in status["content"]
    assert "second commit: a line more" in log["content"] and "first commit" in log["content"]
    assert "+third, not staged" in diff["content"]
    assert agent.registry.get("git_status") is not None and agent.registry.get("git_status").read_only  # type: ignore[union-attr]
    assert not agent.registry.get("git_commit").read_only  # type: ignore[union-attr]


def test_an_agent_calls_a_fastmcp_server_over_streamable_http(notes_url: str) -> None:
    provider = Scripted(
        [
            {"tool_calls": [{"id": "a", "name": "add_note", "arguments": {"text": "buy milk"}}]},
            {"tool_calls": [{"id": "b", "name": "list_notes", "arguments": {}}]},
            {"content": "you have one note"},
        ]
    )
    server = MCPServer.http(notes_url, headers={"X-Test": "1"}, name="notes")
    agent = Agent(provider, tools=[server])
    assert agent.run_sync("notes?") == "you have one note"
    added, listed = results(agent.session)
    assert added == {**added, "isError": False} and "noted" in added["content"]
    assert "buy milk" in listed["content"]
    assert agent.registry.get("list_notes").read_only  # type: ignore[union-attr]


def test_two_servers_offering_one_name_get_prefixed_names_and_stable_schemas() -> None:
    async def go() -> tuple[list[str], str, str, str | None]:
        registry = ToolRegistry([time_server("time"), time_server("clock")])
        await registry.prepare()
        names, before = registry.names, registry.schemas_json()
        schemas = registry.schemas()
        await registry.prepare()  # nothing changed: the same cached tuple (a prompt cache holds)
        assert registry.schemas() is schemas
        other = ToolRegistry([time_server("time"), time_server("clock")])
        await other.prepare()
        owner = registry.owner("clock__get_current_time")
        out = other.schemas_json()
        await registry.aclose()
        await other.aclose()
        return names, before, out, owner

    names, before, again, owner = asyncio.run(go())
    assert names == [
        "clock__convert_time",
        "clock__get_current_time",
        "time__convert_time",
        "time__get_current_time",
    ]
    assert before == again  # the same servers give the same bytes
    assert owner == "clock"


def test_prefixed_tools_call_the_right_server() -> None:
    provider = calls(
        ("clock__get_current_time", {"timezone": "UTC"}), ("time__get_current_time", {"timezone": "UTC"})
    )
    agent = Agent(provider, tools=[time_server("time"), time_server("clock")])
    agent.run_sync("time?")
    assert [r["isError"] for r in results(agent.session)] == [False, False]


def test_a_tools_list_changed_notification_refreshes_the_tools() -> None:
    provider = Scripted(
        [
            {"tool_calls": [{"id": "g", "name": "grow", "arguments": {}}]},
            {"tool_calls": [{"id": "e", "name": "extra", "arguments": {}}]},
            {"content": "done"},
        ]
    )
    agent = Agent(provider, tools=[fault_server()])
    agent.run_sync("grow")
    first, second = ([t["function"]["name"] for t in r.tools] for r in provider.requests[:2])
    assert "extra" not in first and "extra" in second
    assert [r["content"] for r in results(agent.session)] == ["grown", "extra!"]
    headers = [e for e in agent.session.events if e["type"] == "request/header"]
    assert len(headers) == 2  # logged again because the tools changed, and only then


def test_an_image_result_is_a_content_block() -> None:
    agent = Agent(calls(("picture", {})), tools=[fault_server()])
    agent.run_sync("draw")
    (result,) = results(agent.session)
    content = result["content"]
    assert isinstance(content, list) and content[0]["type"] == "image_url"
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")


def test_read_only_mcp_calls_run_at_once() -> None:
    # `meet` answers "met" only when the other call is in flight too: run one after the other,
    # the first would wait alone (30 s, then "alone")
    agent = Agent(calls(("meet", {"who": "a"}), ("meet", {"who": "b"})), tools=[fault_server()])
    agent.run_sync("meet")
    assert [r["content"] for r in results(agent.session)] == ["a met", "b met"]


def test_read_only_mcp_calls_share_a_batch_and_keep_call_order() -> None:
    specs = [("echo", {"text": f"n{i}"}) for i in range(6)]
    agent = Agent(calls(*specs), tools=[fault_server()])
    agent.run_sync("echo")
    assert [r["content"] for r in results(agent.session)] == [f"n{i}" for i in range(6)]
    assert agent.registry.get("echo").read_only  # type: ignore[union-attr]
