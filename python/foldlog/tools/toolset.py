"""Toolsets: sources of tools listed at run time (an MCP server stands for all of its tools).

A :class:`Toolset` goes into ``Agent(tools=[...])`` beside ordinary tools. The registry lists it
once, when the agent starts (`ToolRegistry.prepare`), keeps the listing, and lists it again only
when the toolset says its tools changed (``stale``: an MCP server's
``notifications/tools/list_changed``). Its tools are plain :class:`~foldlog.tools.registry.Tool`
objects whose functions call the toolset, so the runner treats them like any other (limits,
hooks, read-only concurrency).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from foldlog.tools.registry import Tool


@runtime_checkable
class Toolset(Protocol):
    """What the registry needs of a source of tools (`foldlog.mcp.MCPServer` is one)."""

    @property
    def name(self) -> str:
        """The toolset's name: the prefix of its tools' names when two toolsets offer one name."""
        ...

    @property
    def stale(self) -> bool:
        """Whether the tools changed since the last `list_tools` (the registry lists them again)."""
        ...

    async def list_tools(self) -> Sequence[Tool]:
        """Connect if needed and list the tools (raises a `FoldlogError` naming the toolset)."""
        ...

    async def aclose(self) -> None:
        """Release the connection (the next `list_tools` or call opens it again)."""
        ...


__all__ = ["Toolset"]
