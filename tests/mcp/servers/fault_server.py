"""A small MCP server (written with the SDK's MCPServer) whose tools misbehave on purpose.

``python fault_server.py [MODE]``: MODE ``serve`` (default) serves; ``nostart`` writes to
stderr and exits before serving. The tools: ``echo`` (well behaved), ``meet`` (answers only when
two calls are in flight), ``crash`` (the process dies mid-call), ``hang`` (never answers),
``flood`` (a huge result and a flood of stderr), ``picture`` (an image), ``grow`` (adds a tool
and says the list changed). (A reply that is not JSON-RPC or not UTF-8: ``raw_server.py``.)
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations

PNG_1PX = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)

if sys.argv[1:] == ["nostart"]:
    print("fault_server: cannot open the database /nonexistent/db (refusing to start)", file=sys.stderr)
    sys.exit(2)

server = MCPServer("faults")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say it back."""
    print(f"echo called with {text!r}", file=sys.stderr)
    return text


MET = asyncio.Event()
ARRIVED: list[str] = []


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def meet(who: str) -> str:
    """Wait for a second caller: answers "met" only when two calls are in flight at once."""
    ARRIVED.append(who)
    if len(ARRIVED) >= 2:
        MET.set()
    try:
        await asyncio.wait_for(MET.wait(), 30)
    except TimeoutError:
        return f"{who} alone"
    return f"{who} met"


@server.tool()
def crash() -> str:
    """Die in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.sleep(3600)
    return "late"


@server.tool()
def flood() -> str:
    """A result of 3 MB, and 20,000 lines on stderr."""
    for i in range(20000):
        os.write(2, f"flood line {i} \xff\n".encode("latin-1"))
    return "x" * 3_000_000


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def picture() -> Image:
    """A 1x1 PNG."""
    return Image(data=PNG_1PX, format="png")


@server.tool()
async def grow(ctx: Context) -> str:
    """Add a tool named ``extra`` and say the tool list changed."""

    def extra() -> str:
        """A tool added at run time."""
        return "extra!"

    server.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "grown"


if __name__ == "__main__":
    server.run("stdio")
