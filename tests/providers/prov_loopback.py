"""A real HTTP/1.1 server on 127.0.0.1 for provider tests, scripted per request.

Each incoming request is answered by the next handler in the list (the last one repeats). The
server speaks just enough HTTP for httpx: it reads the request, then the handler writes raw bytes
and may cut the connection or stall wherever a fault test wants.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def shared_dir() -> Path:
    env = os.environ.get("FOLDLOG_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / ".." / "shared"


def corpus(*parts: str) -> Path:
    path = shared_dir() / "corpus"
    for p in parts:
        path = path / p
    return path


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Handler = Callable[[Received, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class Loopback:
    handlers: Sequence[Handler]
    requests: list[Received] = field(default_factory=list)
    port: int = 0
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def __aenter__(self) -> Loopback:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        # connections a stall test left open must not keep the server alive
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            req = Received(method, path, headers, body)
            self.requests.append(req)
            handler = self.handlers[min(len(self.requests) - 1, len(self.handlers) - 1)]
            await handler(req, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)


# --- handlers --------------------------------------------------------------------------------


def status(code: int, body: str = "", headers: dict[str, str] | None = None) -> Handler:
    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        data = body.encode()
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        w.write(
            f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
            f"Connection: close\r\n{extra}\r\n".encode()
            + data
        )
        await w.drain()

    return handle


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


def sse_lines(objs: Sequence[Any], *, done: bool = True) -> bytes:
    out = b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objs)
    return out + (b"data: [DONE]\n\n" if done else b"")


def chunk_obj(
    delta: dict[str, Any] | None = None, finish: str | None = None, usage: Any = None
) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "x", "object": "chat.completion.chunk", "choices": choices, "usage": usage}
