"""The provider's POSTs through its own pool (`LeanPost` in providers/http/pool.py): built once per
client and sent to the transport without `httpx.AsyncClient.send`, they carry what the client's
own request would — the same headers and body, a streamed body with its ``Content-Length`` — and
cookies still work: a cookie a response sets goes back with the next request."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from foldlog import Agent, Session
from foldlog.providers import OpenAICompatible, Request, collect
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import Handler, LoopbackServer, Received

GOOD = sse_lines(
    [
        chunk_obj({"role": "assistant", "content": "ok"}),
        chunk_obj({"content": ""}, finish="stop"),
    ]
)
ASK = Request(messages=[{"role": "user", "content": "q"}])


def answering(set_cookie: str | None = None) -> Handler:
    """Answers GOOD on a kept connection; ``set_cookie``: with that ``Set-Cookie`` header."""

    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        cookie = f"Set-Cookie: {set_cookie}\r\n" if set_cookie else ""
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            + f"{cookie}Content-Length: {len(GOOD)}\r\n\r\n".encode()
            + GOOD
        )
        await w.drain()

    return handle


def test_a_post_skips_the_clients_send_and_carries_what_it_would(monkeypatch: pytest.MonkeyPatch) -> None:
    async def main() -> tuple[list[Received], str]:
        async with (
            LoopbackServer(answering(), keep_alive=True) as srv,
            OpenAICompatible(srv.base_url, "k", "m") as p,
        ):
            post = p._client_for_loop()
            client = post.client

            async def refused(*args: Any, **kwargs: Any) -> Any:
                raise AssertionError("the lean path went through AsyncClient.send")

            with monkeypatch.context() as m:
                m.setattr(client, "send", refused)
                text = (await collect(p.stream(ASK))).text
            # the same body through the client itself, as before: what the server must see again
            body = p.encode_request(ASK)
            assert isinstance(body, bytes)
            response = await client.send(client.build_request("POST", p.url, content=body), stream=True)
            await response.aread()
            await response.aclose()
            return srv.requests, text

    (lean, through_client), text = asyncio.run(main())
    assert text == "ok"
    assert lean.headers == through_client.headers
    assert lean.body == through_client.body and lean.path == through_client.path
    assert lean.headers["authorization"] == "Bearer k" and lean.headers["content-length"] == str(
        len(lean.body)
    )


def test_a_streamed_body_states_its_length() -> None:
    """An agent's request body is written as it is sent (the session's cached message segments):
    it goes with a ``Content-Length``, never chunked."""

    async def main() -> list[Received]:
        async with (
            LoopbackServer(answering(), keep_alive=True) as srv,
            OpenAICompatible(srv.base_url, "k", "m") as p,
        ):
            assert await Agent(p, [], Session(system="s")).run("q") == "ok"
            return srv.requests

    (req,) = asyncio.run(main())
    assert "transfer-encoding" not in req.headers
    assert req.headers["content-length"] == str(len(req.body))
    assert req.json()["messages"][-1] == {"role": "user", "content": "q"}


def test_a_cookie_a_response_sets_goes_back_with_the_next_request() -> None:
    async def main() -> list[Received]:
        async with (
            LoopbackServer(answering("route=abc; Path=/"), keep_alive=True) as srv,
            OpenAICompatible(srv.base_url, "k", "m") as p,
        ):
            for _ in range(2):
                assert (await collect(p.stream(ASK))).text == "ok"
                await asyncio.sleep(0.01)  # the end of the body is read in the background
            return srv.requests

    first, second = asyncio.run(main())
    assert "cookie" not in first.headers
    assert second.headers["cookie"] == "route=abc"
