"""MCP servers as tools (``pip install 'foldlog[mcp]'``): :class:`MCPServer` and the
configuration readers. The ``mcp`` SDK is imported only when a server is made or connects."""

from __future__ import annotations

from foldlog.mcp.config import load_mcp_file, server_from_entry, servers_from_mapping
from foldlog.mcp.server import MCPServer

__all__ = ["MCPServer", "load_mcp_file", "server_from_entry", "servers_from_mapping"]
