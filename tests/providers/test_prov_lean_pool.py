"""The lean HTTP/1.1 pool (providers/http/pool.py) on a real loopback server: a stream read to its
``[DONE]`` leaves its connection for the next request, a connection the server closed is not
reused, a request finding every connection in use waits (then times out), and failures are
httpx's exceptions."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

from foldlog.providers import OpenAICompatible, Request, collect
from foldlog.providers.http.pool import LeanTransport, lean_pool_applies
from foldlog.providers.http.replies import shared_ssl_context
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import Handler, LoopbackServer, Received

GOOD = sse_lines(
    [
        chunk_obj({"role": "assistant", "content": "ok"}),
        chunk_obj({"content": ""}, finish="stop"),
    ]
)


def kept_alive(connections: set[int], *, close_after: bool = False) -> Handler:
    """Answers GOOD with a Content-Length on a kept connection, noting each connection it saw;
    ``close_after``: then closes the connection without saying so."""

    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        connections.add(id(w))
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            + f"Content-Length: {len(GOOD)}\r\n\r\n".encode()
            + GOOD
        )
        await w.drain()
        if close_after:
            w.close()

    return handle


def test_requests_in_turn_share_one_connection() -> None:
    connections: set[int] = set()

    async def main() -> list[str]:
        async with (
            LoopbackServer(kept_alive(connections), keep_alive=True) as srv,
            OpenAICompatible(srv.base_url, "k", "m") as p,
        ):
            ask = Request(messages=[{"role": "user", "content": "q"}])
            texts = []
            for _ in range(5):
                texts.append((await collect(p.stream(ask))).text)
                # the end of the body is read in the background once the reply is handed on
                await asyncio.sleep(0.01)
            return texts

    assert asyncio.run(main()) == ["ok"] * 5
    assert len(connections) == 1


def test_a_connection_the_server_closed_is_not_reused() -> None:
    connections: set[int] = set()

    async def main() -> tuple[list[str], int]:
        async with (
            LoopbackServer(kept_alive(connections, close_after=True), keep_alive=True) as srv,
            OpenAICompatible(srv.base_url, "k", "m", max_retries=0) as p,
        ):
            ask = Request(messages=[{"role": "user", "content": "q"}])
            texts = []
            for _ in range(3):
                texts.append((await collect(p.stream(ask))).text)
                await asyncio.sleep(0.05)  # the close reaches the client
            return texts, p.requests_sent

    texts, sent = asyncio.run(main())
    assert texts == ["ok"] * 3
    assert sent == 3  # no request failed on a dead connection and was sent again
    assert len(connections) == 3


def test_a_request_waits_for_a_connection_then_times_out() -> None:
    async def answer(req: Received, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await w.drain()

    async def main() -> None:
        async with LoopbackServer(answer, keep_alive=True) as srv:
            transport = LeanTransport(max_connections=1, ssl_context=shared_ssl_context())
            timeout = httpx.Timeout(5.0, pool=0.2)
            async with httpx.AsyncClient(transport=transport, timeout=timeout) as client:
                url = srv.base_url + "/x"
                first = await client.send(client.build_request("GET", url), stream=True)
                with pytest.raises(httpx.PoolTimeout):
                    await client.get(url)
                # a waiting request gets the connection once the first response is closed
                waiting = asyncio.create_task(client.get(url))
                await asyncio.sleep(0.05)
                assert not waiting.done()
                await first.aread()
                await first.aclose()
                assert (await waiting).text == "ok"

    asyncio.run(main())


def test_a_refused_connection_is_httpx_connect_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, never listening: connecting is refused

        async def main() -> None:
            transport = LeanTransport(max_connections=4, ssl_context=shared_ssl_context())
            async with httpx.AsyncClient(transport=transport) as client:
                with pytest.raises(httpx.ConnectError):
                    await client.get(f"http://127.0.0.1:{port}/")

        asyncio.run(main())


def test_the_pool_is_used_without_http2_or_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert lean_pool_applies("http://127.0.0.1:1/v1", http2=False)
    assert lean_pool_applies("https://api.example/v1", http2=False)
    assert not lean_pool_applies("https://api.example/v1", http2=True)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert not lean_pool_applies("https://api.example/v1", http2=False)
