"""The provider's connection pool: one provider serves many concurrent sessions, with as many
requests in flight as `max_connections` allows, the rest waiting their turn (measured by a real
loopback server that holds each response until released)."""

from __future__ import annotations

import asyncio

import pytest

from foldlog.providers import OpenAICompatible, Request, collect
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import LoopbackServer, Received

GOOD = sse_lines(
    [
        chunk_obj({"role": "assistant", "content": "ok"}),
        chunk_obj({"content": ""}, finish="stop"),
    ]
)


async def _peak_in_flight(requests: int, release_at: int, **kw: object) -> tuple[int, list[str]]:
    """Send `requests` concurrent requests; the server holds every answer until `release_at` are in
    flight at once (or 20 s pass). Returns the most it saw at once, and the texts."""
    in_flight = 0
    peak = 0
    release = asyncio.Event()

    async def held(req: Received, w: asyncio.StreamWriter) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if in_flight >= release_at:
            release.set()
        try:
            try:
                await asyncio.wait_for(release.wait(), 20)
            except TimeoutError:
                release.set()
            w.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                + f"Content-Length: {len(GOOD)}\r\nConnection: close\r\n\r\n".encode()
                + GOOD
            )
            await w.drain()
        finally:
            in_flight -= 1

    async with LoopbackServer([held]) as srv, OpenAICompatible(srv.base_url, "k", "m", **kw) as p:  # type: ignore[arg-type]
        asks = [Request(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(requests)]
        done = await asyncio.gather(*(collect(p.stream(r)) for r in asks))
    return peak, [c.text for c in done]


def test_the_default_pool_keeps_every_concurrent_request_in_flight() -> None:
    peak, texts = asyncio.run(_peak_in_flight(200, 200))
    assert texts == ["ok"] * 200
    # all 200 reached the server at once: none waited for a connection
    assert peak == 200


def test_max_connections_bounds_requests_in_flight_and_the_rest_wait() -> None:
    peak, texts = asyncio.run(_peak_in_flight(12, 3, max_connections=3))
    assert texts == ["ok"] * 12
    assert peak == 3


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8"])
def test_bad_max_connections_is_named(bad: object) -> None:
    with pytest.raises(ValueError, match="max_connections must be a positive int"):
        OpenAICompatible("http://127.0.0.1:9/v1", "k", "m", max_connections=bad)  # type: ignore[arg-type]
