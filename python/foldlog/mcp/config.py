"""MCP servers from configuration: the ``{"mcpServers": {...}}`` file other tools use, and the
``[mcp.servers.NAME]`` tables of ``foldlog.toml``.

Each entry is ``{"command", "args"?, "env"?, "cwd"?}`` (stdio) or ``{"url", "headers"?}``
(streamable HTTP); ``timeout`` / ``startup_timeout`` (seconds) are accepted by both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigError
from foldlog.mcp.server import DEFAULT_STARTUP_TIMEOUT, DEFAULT_TIMEOUT, MCPServer

_STDIO_KEYS = {"command", "args", "env", "cwd", "timeout", "startup_timeout", "type", "transport"}
_HTTP_KEYS = {"url", "headers", "timeout", "startup_timeout", "type", "transport"}


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{what} must be a table of strings")
    return {str(k): v for k, v in value.items()}


def _seconds(entry: Mapping[str, Any], key: str, default: float | None, where: str) -> Any:
    value = entry.get(key, default)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
        raise ConfigError(f"{where}: {key} must be a positive number of seconds")
    return value


def server_from_entry(name: str, entry: Any, where: str, base: Path | None = None) -> MCPServer:
    """One server of a configuration (``where`` names the file for errors; ``base``: the folder
    relative ``cwd`` values are relative to)."""
    here = f"{where}: MCP server {name!r}"
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{here} must be a table/object")
    timeouts = {
        "timeout": _seconds(entry, "timeout", DEFAULT_TIMEOUT, here),
        "startup_timeout": _seconds(entry, "startup_timeout", DEFAULT_STARTUP_TIMEOUT, here),
    }
    if "command" in entry and "url" in entry:
        raise ConfigError(f"{here} has both command and url: give one")
    if "command" in entry:
        unknown = sorted(set(entry) - _STDIO_KEYS)
        if unknown:
            raise ConfigError(f"{here}: unknown key(s) {', '.join(unknown)}")
        command, args = entry["command"], entry.get("args", [])
        if not isinstance(command, str) or not command:
            raise ConfigError(f"{here}: command must be a non-empty string")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"{here}: args must be a list of strings")
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise ConfigError(f"{here}: cwd must be a string path")
        folder = str((base / cwd) if base is not None and cwd is not None else cwd) if cwd else None
        env = _strings(entry.get("env"), f"{here}: env")
        return MCPServer.stdio(command, args, env or None, folder, name, **timeouts)
    if "url" in entry:
        unknown = sorted(set(entry) - _HTTP_KEYS)
        if unknown:
            raise ConfigError(f"{here}: unknown key(s) {', '.join(unknown)}")
        url = entry["url"]
        if not isinstance(url, str):
            raise ConfigError(f"{here}: url must be a string")
        return MCPServer.http(
            url, _strings(entry.get("headers"), f"{here}: headers") or None, name, **timeouts
        )
    raise ConfigError(f"{here} needs a command (stdio) or a url (streamable HTTP)")


def servers_from_mapping(servers: Any, where: str, base: Path | None = None) -> list[MCPServer]:
    """The servers of a ``{NAME: entry}`` mapping, in name order."""
    if not isinstance(servers, Mapping):
        raise ConfigError(f"{where}: the MCP servers must be a table/object of NAME: server")
    return [server_from_entry(str(n), servers[n], where, base) for n in sorted(servers)]


def load_mcp_file(path: str | Path) -> list[MCPServer]:
    """The servers of an ``{"mcpServers": {...}}`` JSON file."""
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"--mcp {p}: cannot read: {e.strerror or e}") from None
    except ValueError as e:
        raise ConfigError(f"--mcp {p}: not valid JSON: {e}") from None
    if not isinstance(data, Mapping) or "mcpServers" not in data:
        raise ConfigError(f'--mcp {p}: expected an object with "mcpServers"')
    return servers_from_mapping(data["mcpServers"], str(p), p.parent)


__all__ = ["load_mcp_file", "server_from_entry", "servers_from_mapping"]
