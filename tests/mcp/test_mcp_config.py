"""MCP results as tool outcomes, and the ``mcpServers`` / ``[mcp.servers]`` configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldlog.errors import ConfigError
from foldlog.mcp import load_mcp_file, servers_from_mapping
from foldlog.mcp.results import to_outcome
from foldlog.mcp.server import safe_name
from mcp import types


def test_structured_content_alone_is_the_text() -> None:
    out = to_outcome(types.CallToolResult(content=[], structured_content={"b": 1, "a": [2]}))
    assert out.content == '{"a": [2], "b": 1}' and not out.is_error


def test_text_is_kept_beside_structured_content_and_an_error_says_so() -> None:
    text = types.TextContent(type="text", text="it broke")
    out = to_outcome(types.CallToolResult(content=[text], structured_content={"x": 1}, is_error=True))
    assert out.content == "error: it broke" and out.is_error


def test_images_audio_and_resources_become_blocks() -> None:
    content: list[Any] = [
        types.TextContent(type="text", text="look"),
        types.ImageContent(type="image", data="AAAA", mime_type="image/jpeg"),
        types.AudioContent(type="audio", data="BBBB", mime_type="audio/mpeg"),
        types.EmbeddedResource(
            type="resource", resource=types.TextResourceContents(uri="file:///a.txt", text="inside")
        ),
    ]
    out = to_outcome(types.CallToolResult(content=content))
    assert out.content == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
        {"type": "input_audio", "input_audio": {"data": "BBBB", "format": "mpeg"}},
        {"type": "text", "text": "inside"},
    ]


def test_names_are_made_safe() -> None:
    assert safe_name("my.server/v2") == "my_server_v2" and safe_name("...") == "mcp"
    assert len(safe_name("x" * 100)) == 64


def test_an_mcp_servers_file(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    servers = {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"], "env": {"A": "1"}},
        "web": {"url": "http://127.0.0.1:8000/mcp", "headers": {"X-Key": "k"}, "timeout": 5},
    }
    path.write_text(json.dumps({"mcpServers": servers}))
    time, web = load_mcp_file(path)
    assert (time.name, time.kind, time.describe) == ("time", "stdio", "mcp-server-time --local-timezone UTC")
    assert (web.name, web.kind, web.timeout) == ("web", "http", 5)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({}, "needs a command"),
        ({"command": "x", "url": "http://a"}, "both command and url"),
        ({"command": "x", "args": "--flag"}, "args must be a list"),
        ({"command": "x", "bogus": 1}, "unknown key"),
        ({"url": "ftp://a"}, "http"),
        ({"command": "x", "timeout": -1}, "positive number"),
        ({"command": "x", "env": {"A": 1}}, "env must be a table of strings"),
    ],
)
def test_bad_entries_name_the_server_and_the_problem(entry: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        servers_from_mapping({"s": entry}, "foldlog.toml")
    assert "foldlog.toml: MCP server 's'" in str(info.value) or "http" in message


def test_a_file_without_mcp_servers(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_text("[]")
    with pytest.raises(ConfigError, match="mcpServers"):
        load_mcp_file(path)


def test_foldlog_toml_mcp_tables(tmp_path: Path) -> None:
    from foldlog.cli.agent_setup import make_mcp_servers
    from foldlog.cli.config import Config, read_config_file

    good = tmp_path / "foldlog.toml"
    good.write_text('[mcp.servers.time]\ncommand = "mcp-server-time"\ncwd = "sub"\n')
    values = read_config_file(good)
    (server,) = make_mcp_servers(Config(values), None)
    assert server.name == "time" and server.kind == "stdio"
    bad = tmp_path / "bad" / "foldlog.toml"
    bad.parent.mkdir()
    bad.write_text('[mcp]\nserver = "x"\n')
    with pytest.raises(ConfigError, match=r"\[mcp\] takes only \[mcp.servers.NAME\] tables"):
        read_config_file(bad)
