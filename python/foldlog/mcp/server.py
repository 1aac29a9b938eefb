"""`MCPServer`: an MCP server's tools as foldlog tools, over the official ``mcp`` SDK.

An :class:`MCPServer` is a :class:`~foldlog.tools.toolset.Toolset`: it goes into
``Agent(tools=[...])`` and stands for all of the server's tools, or is used alone
(``async with server: await server.list_tools()``). The SDK is imported only when a server
connects (``pip install 'foldlog[mcp]'``).

One connection lives in a task of its own (the SDK's transports are anyio task groups, which
must be entered and left by one task); calls are sent from the tool runner's tasks over it, so
read-only tools run concurrently. What can go wrong is the server's fault, and each case becomes
an error result that names the server, never an exception in the agent:

- the connection drops (the process died, mid-call or between calls): the call in flight gets
  an error result; the next call opens the connection again, once (a server that cannot be
  restarted stays failed until `aclose`);
- no answer within ``timeout`` seconds (a hung server): an error result; the connection stays;
- a line that is not JSON-RPC, or output that is not UTF-8: the calls in flight get an error
  result (the SDK reports the line, or closes the connection);
- a server that cannot start (no such command, exits at once, no answer to ``initialize``
  within ``startup_timeout``) raises :class:`~foldlog.errors.MCPError` with its stderr's tail
  from `list_tools`, so a run fails at its start.

The server's stderr goes to ``logging`` (``foldlog.mcp.<name>``), never to the console.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import contextvars
import logging
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, TextIO, cast

from foldlog.errors import ConfigError, MCPError
from foldlog.mcp.results import to_outcome
from foldlog.mcp.stderr import StderrPipe
from foldlog.tools.host import ToolOutcome
from foldlog.tools.registry import Tool

_log = logging.getLogger("foldlog.mcp")
# what the SDK and the servers report is for the log's handlers, never Python's last-resort
# printing to the console (an application that configures logging still gets every record)
for _name in ("foldlog.mcp", "mcp"):
    logging.getLogger(_name).addHandler(logging.NullHandler())

INSTALL_HINT = "pip install 'foldlog[mcp]'  (the official `mcp` SDK)"
DEFAULT_TIMEOUT = 60.0
DEFAULT_STARTUP_TIMEOUT = 30.0
CLOSE_TIMEOUT = 10.0  # seconds the SDK gets to stop a server (it escalates to a kill itself)
CONNECTION_CLOSED = -32000  # the SDK's error code for a connection that ended
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")

#: opens the transport: the stderr pipe (stdio) or ``None`` -> (read stream, write stream)
Opener = Callable[[StderrPipe | None], AbstractAsyncContextManager[Any]]


def safe_name(name: str) -> str:
    """``name`` as a tool or server name foldlog accepts (``[A-Za-z0-9_-]``, at most 64)."""
    return _UNSAFE.sub("_", name).strip("_")[:64] or "mcp"


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise ConfigError(f"MCP servers need the mcp package: {INSTALL_HINT}") from None
    return mcp


# The connection whose stdout is being decoded (the SDK's reader task runs in a copy of the
# context of the task that opened the transport).
_DECODING: contextvars.ContextVar[_Connection | None] = contextvars.ContextVar(
    "foldlog_mcp_decoding", default=None
)
BAD_BYTES = "foldlog-mcp-bad-bytes"


def _on_bad_bytes(e: UnicodeError) -> tuple[str, int]:
    """The codec error handler of a stdio server's output: bytes that are not UTF-8 fail the
    calls in flight (naming the server) and are replaced, so the connection reads on. (The
    SDK's ``strict`` would end its reader silently and leave every call hanging.)"""
    if not isinstance(e, UnicodeDecodeError):
        raise e
    conn = _DECODING.get()
    if conn is not None:
        conn.bad_bytes(e)
    return "\ufffd", e.end


codecs.register_error(BAD_BYTES, _on_bad_bytes)


def _first_error(e: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio task groups wrap what failed)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    return e


def _describe(e: BaseException) -> str:
    e = _first_error(e)
    if isinstance(e, UnicodeDecodeError):
        return f"it wrote bytes that are not UTF-8 ({e.reason} at byte {e.start})"
    lines = (str(e) or type(e).__name__).splitlines()
    text = " ".join(line.strip() for line in lines[:2])[:300]
    return f"{type(e).__name__}: {text}" if type(e).__name__ not in text else text


class _Connection:
    """One open connection: the task that holds the transport and the SDK session."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server
        self.loop = asyncio.get_running_loop()
        self.session: Any = None
        self.dead = False
        self.error: str | None = None
        self.closing = asyncio.Event()
        self.fault: asyncio.Future[str] = self.loop.create_future()
        self.pipe = StderrPipe(server.name) if server.kind == "stdio" else None
        self.task: asyncio.Task[None] | None = None

    async def open(self, startup_timeout: float) -> None:
        ready: asyncio.Future[None] = self.loop.create_future()
        ready.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.task = asyncio.create_task(self._serve(ready), name=f"foldlog-mcp-{self.server.name}")
        try:
            await asyncio.wait_for(asyncio.shield(ready), startup_timeout)
        except TimeoutError:
            await self.close()
            raise self._start_error(f"did not answer initialize within {startup_timeout:g} s") from None
        except MCPError:
            raise
        except Exception as e:
            await self.close()
            raise self._start_error(f"could not start: {_describe(e)}") from None

    def _start_error(self, what: str) -> MCPError:
        tail = self.pipe.text(wait=1.0) if self.pipe is not None else ""
        where = self.server.describe
        message = f"MCP server {self.server.name!r} ({where}) {what}"
        if tail:
            message += f"; its stderr ends with:\n{tail}"
        return MCPError(message, server=self.server.name, stderr=tail)

    def bad_bytes(self, e: UnicodeDecodeError) -> None:
        _log.warning("MCP server %r wrote bytes that are not UTF-8 (%s)", self.server.name, e.reason)
        self._signal(f"it wrote bytes that are not UTF-8 on its stdout ({e.reason})")

    async def _serve(self, ready: asyncio.Future[None]) -> None:
        from mcp import ClientSession

        _DECODING.set(self)
        try:
            async with contextlib.AsyncExitStack() as stack:
                read, write = await stack.enter_async_context(self.server.opener(self.pipe))
                if self.pipe is not None:
                    self.pipe.close_writer()
                session = ClientSession(read, write, message_handler=self._on_message)
                await stack.enter_async_context(session)
                await session.initialize()
                self.session = session
                ready.set_result(None)
                await self.closing.wait()
        except BaseException as e:
            self.error = _describe(e)
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else ConnectionError(self.error))
            elif not self.closing.is_set():
                _log.warning("MCP server %r: the connection ended: %s", self.server.name, self.error)
            if not isinstance(e, Exception):
                raise
        finally:
            self.dead = True
            if self.pipe is not None:
                self.pipe.close_writer()
            self._signal(f"the connection ended ({self.error or 'closed'})")

    def _signal(self, what: str) -> None:
        """Fail the calls in flight (they wait on ``fault``); later calls wait on a new one."""
        if not self.fault.done():
            self.fault.set_result(what)
        if not self.dead:
            self.fault = self.loop.create_future()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            what = _describe(message)
            _log.warning("MCP server %r sent something that is not JSON-RPC: %s", self.server.name, what)
            self._signal(f"it sent a message that is not valid JSON-RPC ({what})")
        elif getattr(message, "method", None) == "notifications/tools/list_changed":
            self.server.mark_stale()

    async def call(
        self, name: str, arguments: Mapping[str, Any], timeout: float | None
    ) -> tuple[ToolOutcome, bool]:
        """The call's outcome, and whether the connection dropped."""
        who = f"MCP server {self.server.name!r}"
        fault = self.fault
        work = asyncio.ensure_future(self.session.call_tool(name, dict(arguments)))
        try:
            done, _ = await asyncio.wait({work, fault}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            work.cancel()
            raise
        if work in done and fault not in done:
            try:
                return to_outcome(work.result()), False
            except Exception as e:
                dropped = self.dead or getattr(e, "code", None) == CONNECTION_CLOSED
                if dropped:
                    self.dead = True
                    reason = self.error or _describe(e)
                    return ToolOutcome(
                        f"error: {who} dropped the connection during {name}: {reason}", True
                    ), True
                return ToolOutcome(f"error: {who} refused {name}: {_describe(e)}", True), False
        work.cancel()
        work.add_done_callback(lambda f: f.cancelled() or f.exception())
        if fault in done:
            await asyncio.sleep(0)  # let a dying connection say so
            dropped = self.dead
            return ToolOutcome(f"error: {who} failed during {name}: {fault.result()}", True), dropped
        return ToolOutcome(f"error: {who} did not answer {name} within {timeout:g} s", True), False

    async def close(self) -> None:
        self.closing.set()
        task = self.task
        if task is None or task.done():
            return
        if self.session is None:  # still starting: nothing to say goodbye to
            task.cancel()
        done, _ = await asyncio.wait({task}, timeout=CLOSE_TIMEOUT)
        if not done:
            task.cancel()
            _log.warning("MCP server %r did not stop within %g s", self.server.name, CLOSE_TIMEOUT)


class MCPServer:
    """An MCP server whose tools join an agent's tools. Make one with :meth:`stdio` or :meth:`http`.

    ``timeout``: seconds one call may take (``None``: unbounded; `Options.tool_timeout` applies
    as well); ``startup_timeout``: seconds to start and answer ``initialize``.
    """

    def __init__(
        self,
        name: str,
        opener: Opener,
        *,
        kind: str,
        describe: str,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> None:
        if timeout is not None and timeout <= 0:
            raise ConfigError(f"MCPServer timeout must be > 0 or None, got {timeout}")
        if startup_timeout <= 0:
            raise ConfigError(f"MCPServer startup_timeout must be > 0, got {startup_timeout}")
        self._name = safe_name(name)
        self.opener = opener
        self.kind = kind
        self.describe = describe
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self._conn: _Connection | None = None
        self._lock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self._tools: list[Tool] | None = None
        self._stale = False
        self._failed: str | None = None  # why a restart failed: no more tries until aclose()
        self._dropped = False  # the last connection dropped: the next one is a restart
        self.restarts = 0

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        name: str | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> MCPServer:
        """A server started as a child process speaking MCP over its stdin/stdout (``env`` is
        added to a minimal environment, as the SDK does; ``name``: default the command's name)."""
        if not command or not isinstance(command, str):
            raise ConfigError(f"MCPServer.stdio needs a command, got {command!r}")
        if isinstance(args, str):
            raise ConfigError("MCPServer.stdio args must be a list of strings, not one string")
        argv = [str(a) for a in args]
        extra = {str(k): str(v) for k, v in (env or {}).items()}
        folder = None if cwd is None else str(Path(cwd))

        def opener(pipe: StderrPipe | None) -> AbstractAsyncContextManager[Any]:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(command=command, args=argv, env=extra or None, cwd=folder)
            params.encoding_error_handler = BAD_BYTES  # type: ignore[assignment]
            assert pipe is not None and pipe.writer is not None
            return stdio_client(params, errlog=cast("TextIO", pipe.writer))

        _sdk()
        return cls(
            name or Path(command).name,
            opener,
            kind="stdio",
            describe=shlex.join([command, *argv]),
            timeout=timeout,
            startup_timeout=startup_timeout,
        )

    @classmethod
    def http(
        cls,
        url: str,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        *,
        timeout: float | None = DEFAULT_TIMEOUT,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
    ) -> MCPServer:
        """A server at a streamable-HTTP endpoint (``headers``: sent with every request, e.g.
        ``Authorization``; never shown in messages)."""
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(f"MCPServer.http needs an http(s) URL, got {url!r}")
        sent = {str(k): str(v) for k, v in (headers or {}).items()}

        @contextlib.asynccontextmanager
        async def opener(_pipe: StderrPipe | None) -> Any:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            client = httpx2.AsyncClient(headers=sent, timeout=httpx2.Timeout(30.0, read=300.0))
            async with client, streamable_http_client(url, http_client=client) as streams:
                yield streams

        _sdk()
        host = re.sub(r"^https?://", "", url).split("/")[0]
        return cls(
            name or host, opener, kind="http", describe=url, timeout=timeout, startup_timeout=startup_timeout
        )

    # --- the Toolset protocol -------------------------------------------------------------

    @property
    def name(self) -> str:
        return self._name

    @property
    def stale(self) -> bool:
        return self._stale

    def mark_stale(self) -> None:
        """The tools changed (``notifications/tools/list_changed``): list them again before the
        next request."""
        self._stale = True

    def __repr__(self) -> str:
        return f"MCPServer({self._name!r}, {self.kind}: {self.describe})"

    async def list_tools(self) -> list[Tool]:
        """The server's tools (listed once, then cached until the server says they changed)."""
        if self._tools is not None and not self._stale and self._alive():
            return self._tools
        self._failed = None  # an explicit listing may start a failed server again
        conn = await self._connect()
        self._stale = False
        listed: list[Any] = []
        cursor: str | None = None
        from mcp import types

        while True:
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            try:
                page = await asyncio.wait_for(conn.session.list_tools(params=params), self.startup_timeout)
            except Exception as e:
                raise MCPError(
                    f"MCP server {self._name!r} ({self.describe}) could not list its tools: {_describe(e)}",
                    server=self._name,
                ) from None
            listed.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        self._tools = [self._tool(t) for t in sorted(listed, key=lambda t: str(t.name))]
        return self._tools

    def _tool(self, spec: Any) -> Tool:
        remote = str(spec.name)
        annotations = getattr(spec, "annotations", None)
        schema = dict(spec.input_schema or {}) or {"type": "object", "properties": {}}

        async def call(**arguments: Any) -> ToolOutcome:
            return await self.call_tool(remote, arguments)

        return Tool(
            name=safe_name(remote),
            description=str(spec.description or getattr(spec, "title", None) or ""),
            parameters=schema,
            fn=call,
            read_only=bool(getattr(annotations, "read_only_hint", False)),
            is_async=True,
        )

    async def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolOutcome:
        """Call tool ``name`` (its name on the server); an error result on any failure."""
        if self._failed is not None:
            return ToolOutcome(f"error: MCP server {self._name!r} is unavailable: {self._failed}", True)
        try:
            conn = await self._connect()
        except MCPError as e:
            self._failed = str(e)
            return ToolOutcome(f"error: {e}", True)
        outcome, dropped = await conn.call(name, arguments or {}, self.timeout)
        if dropped:
            if self._conn is conn:
                self._conn = None  # the next call starts the server again (once)
                self._dropped = True
            await conn.close()
        return outcome

    def _alive(self) -> bool:
        conn = self._conn
        if conn is None or conn.dead:
            return False
        try:
            return conn.loop is asyncio.get_running_loop()
        except RuntimeError:
            return False

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock[0] is not loop:  # `run_sync` runs each time on a new loop
            self._lock = (loop, asyncio.Lock())
        async with self._lock[1]:
            if self._alive():
                assert self._conn is not None
                return self._conn
            restarting = self._dropped
            old, self._conn = self._conn, None
            if old is not None and old.loop is loop:
                await old.close()
            _sdk()
            conn = _Connection(self)
            await conn.open(self.startup_timeout)
            if restarting:
                self.restarts += 1
                self._dropped = False
                self._stale = True  # a restarted server may offer other tools
                _log.info("MCP server %r: connection opened again", self._name)
            self._conn = conn
            return conn

    async def aclose(self) -> None:
        """Close the connection (stops a stdio server); the next use opens it again, and the
        next listing lists again (another process may offer other tools)."""
        conn, self._conn = self._conn, None
        self._failed = None
        self._dropped = False
        if self._tools is not None:
            self._stale = True
        if conn is not None and conn.loop is asyncio.get_running_loop():
            await conn.close()

    async def __aenter__(self) -> MCPServer:
        await self.list_tools()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["MCPServer", "safe_name"]
