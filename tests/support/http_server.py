"""The one loopback HTTP/1.1 server of the tests and benches, answering with scripted handlers.

It speaks just enough HTTP for httpx, requests and the OpenAI SDK: it reads a request (head and
``Content-Length`` body), records it, and hands it to the next handler, which writes raw bytes. A
handler is a coroutine, so it may answer a status, stream SSE in pieces with pauses, stall, or cut
the connection mid-body wherever a fault test wants; the server is one, the faults are handlers.

Two ways to run it, same server:

- ``async with LoopbackServer(...)``: on the running event loop, for async tests (a handler may
  share asyncio objects with the test);
- ``with LoopbackServer(...)`` (or ``start()`` / ``close()``): on its own event loop in a daemon
  thread, for sync tests and for clients in other processes (the CLI, a bench's peers).

It binds 127.0.0.1 on a free port (or the one given). A handler's unexpected error is kept in
``errors`` and raised when the server closes, so a broken script fails its test instead of
passing silently behind a dropped connection.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Self

# a client that went away (or sent a head past the limit) ends its connection, not the test
_CLIENT_GONE = (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError)


@dataclass
class Received:
    """One request as the server read it (header names lower-cased)."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    _reader: asyncio.StreamReader | None = field(default=None, repr=False, compare=False)

    def json(self) -> Any:
        return json.loads(self.body)

    async def client_gone(self) -> None:
        """Return once the client closes its end of the connection (or sends more bytes): a
        stalling handler holds the connection open and silent until the client gives up."""
        assert self._reader is not None
        await self._reader.read(1)


Handler = Callable[[Received, asyncio.StreamWriter], Awaitable[None]]


class LoopbackServer:
    """Request ``i`` is answered by ``handlers[i]`` (the last one repeats).

    ``record=False`` keeps no requests (a load test's thousands); ``keep_alive`` serves further
    requests on a connection until the client asks to close (for handlers that send a
    ``Content-Length``); ``max_body`` answers 413 to a bigger request; ``max_connections`` bounds
    the connections served at once; ``backlog`` is the listen queue.
    """

    def __init__(
        self,
        handlers: Handler | Sequence[Handler],
        *,
        record: bool = True,
        keep_alive: bool = False,
        max_body: int | None = None,
        max_connections: int | None = None,
        backlog: int = 100,
        port: int = 0,
    ) -> None:
        self.handlers: Sequence[Handler] = [handlers] if callable(handlers) else list(handlers)
        assert self.handlers, "a server needs at least one handler"
        self.requests: list[Received] = []
        self.served = 0  # requests answered by a handler, recorded or not
        self.errors: list[BaseException] = []
        self.port = port
        self._record = record
        self._keep_alive = keep_alive
        self._max_body = max_body
        self._max_connections = max_connections
        self._backlog = backlog
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots: asyncio.Semaphore | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    # --- where clients reach it ----------------------------------------------------------------

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The origin with ``/v1``: what OpenAI-compatible and Anthropic clients take."""
        return f"{self.origin}/v1"

    @property
    def bodies(self) -> list[Any]:
        """The recorded requests' bodies as JSON."""
        return [r.json() for r in self.requests]

    # --- on the running loop -------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self._listen()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._shutdown()
        if exc[0] is None:
            self._raise_errors()

    # --- on its own thread ---------------------------------------------------------------------

    def start(self) -> Self:
        ready = threading.Event()
        failed: list[BaseException] = []

        async def main() -> None:
            self._stop = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            try:
                await self._listen()
            except Exception as e:  # raised in the caller's thread, not lost in this one
                failed.append(e)
                return
            finally:
                ready.set()
            await self._stop.wait()
            await self._shutdown()

        self._thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True, name="loopback")
        self._thread.start()
        ready.wait()
        if failed:
            self._thread.join()
            raise failed[0]
        return self

    def close(self) -> None:
        assert self._thread is not None and self._loop is not None and self._stop is not None
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        self._raise_errors()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            self.errors.clear()  # the test's own failure is the one to see
        self.close()

    # --- serving -------------------------------------------------------------------------------

    async def _listen(self) -> None:
        if self._max_connections is not None:
            self._slots = asyncio.Semaphore(self._max_connections)
        limit = max(self._max_body or 0, 2**16)
        self._server = await asyncio.start_server(
            self._serve, "127.0.0.1", self.port, backlog=self._backlog, limit=limit
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        assert self._server is not None
        self._server.close()
        # connections a stalling handler left open must not keep the server alive
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    def _raise_errors(self) -> None:
        if self.errors:
            raise self.errors[0]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            if self._slots is None:
                await self._converse(reader, writer)
            else:
                async with self._slots:
                    await self._converse(reader, writer)
        except _CLIENT_GONE:
            pass
        except Exception as e:
            self.errors.append(e)
        finally:
            writer.close()
            self._tasks.discard(task)

    async def _converse(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers: dict[str, str] = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            length = int(headers.get("content-length", "0"))
            if self._max_body is not None and length > self._max_body:
                writer.write(
                    b"HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                await writer.drain()
                return
            body = await reader.readexactly(length)
            req = Received(method, path, headers, body, reader)
            if self._record:
                self.requests.append(req)
            handler = self.handlers[min(self.served, len(self.handlers) - 1)]
            self.served += 1
            await handler(req, writer)
            if not self._keep_alive or headers.get("connection", "").lower() == "close":
                return


# --- handlers ------------------------------------------------------------------------------------


def status(
    code: int, body: str = "", headers: dict[str, str] | None = None, content_type: str = "application/json"
) -> Handler:
    """A whole response: ``code``, ``body`` and any extra ``headers``."""

    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        await write_response(w, code, body.encode(), headers, content_type=content_type)

    return handle


async def write_response(
    w: asyncio.StreamWriter,
    code: int,
    body: bytes,
    headers: dict[str, str] | None = None,
    *,
    content_type: str = "application/json",
    close: bool = True,
) -> None:
    """Write one response with a ``Content-Length`` (``close=False``: the connection may stay)."""
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    w.write(
        f"HTTP/1.1 {code} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n".encode()
        + (b"Connection: close\r\n" if close else b"")
        + f"{extra}\r\n".encode()
        + body
    )
    await w.drain()


def sse(
    payload: bytes,
    *,
    piece: int = 0,
    cut_at: int | None = None,
    stall_at: int | None = None,
    chunked: bool = True,
) -> Handler:
    """Serve ``payload`` as an event stream, ``piece`` bytes per write (0: all at once).

    ``cut_at``: close the connection after that many body bytes (chunked: mid-chunk, a transport
    error; close-delimited: a clean early end). ``stall_at``: stop sending there, keep it open.
    """

    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n"
            + (b"Transfer-Encoding: chunked\r\n" if chunked else b"")
            + b"\r\n"
        )
        end = len(payload)
        for limit in (cut_at, stall_at):
            if limit is not None:
                end = min(end, limit)
        step = piece or max(end, 1)
        for i in range(0, end, step):
            part = payload[i : min(i + step, end)]
            if chunked:
                # announce the full remaining size when cutting, so the cut lands mid-chunk
                size = len(part) if cut_at is None or i + step < end else len(part) + 1
                w.write(f"{size:x}\r\n".encode() + part + (b"\r\n" if size == len(part) else b""))
            else:
                w.write(part)
            await w.drain()
        if stall_at is not None:
            await asyncio.sleep(3600)
        if cut_at is None and chunked:
            w.write(b"0\r\n\r\n")
            await w.drain()

    return handle
