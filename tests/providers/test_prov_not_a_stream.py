"""A success answer that is not a completion (a captive portal's HTML page, a proxy's redirect),
served by a real loopback HTTP server: named by its status, content type and first bytes, sent
once, never retried or replayed — for the chat-completions client and the Anthropic one."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from foldlog.errors import StreamProtocolError, UnexpectedResponseError
from foldlog.providers import OpenAICompatible, Request, RetryPolicy, collect
from foldlog.providers.anthropic.provider import Anthropic
from tests.support.chat_server import sse_lines
from tests.support.http_server import Handler, LoopbackServer, Received, sse

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05)
REQ = Request(messages=[{"role": "user", "content": "hi"}])
PORTAL = (
    "<!DOCTYPE html><html><head><title>Welcome to Airport Wi-Fi</title></head>"
    "<body>Please accept the terms to continue.</body></html>"
)


def page(code: int, body: str, content_type: str | None, headers: dict[str, str] | None = None) -> Handler:
    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        data = body.encode()
        lines = [f"HTTP/1.1 {code} X", f"Content-Length: {len(data)}", "Connection: close"]
        if content_type is not None:
            lines.append(f"Content-Type: {content_type}")
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        w.write(("\r\n".join(lines) + "\r\n\r\n").encode() + data)
        await w.drain()

    return handle


def _fail(handler: Handler, *, anthropic: bool = False) -> tuple[UnexpectedResponseError, int, list[Any]]:
    retries: list[Any] = []
    box: dict[str, Any] = {}

    async def go() -> None:
        async with LoopbackServer([handler]) as srv:
            kw: dict[str, Any] = {"retry": FAST, "on_retry": lambda *a: retries.append(a)}
            p: OpenAICompatible = (
                Anthropic(api_key="k", base_url=srv.base_url.removesuffix("/v1"), **kw)
                if anthropic
                else OpenAICompatible(srv.base_url, "k", "m", **kw)
            )
            try:
                box["sent"] = srv.requests
                await collect(p.stream(REQ))
            finally:
                await p.aclose()

    with pytest.raises(UnexpectedResponseError) as info:
        asyncio.run(go())
    assert isinstance(info.value, UnexpectedResponseError)
    return info.value, len(box["sent"]), retries


@pytest.mark.parametrize("anthropic", [False, True], ids=["openai-compatible", "anthropic"])
def test_a_captive_portal_page_is_named_by_its_content_type_and_first_bytes(anthropic: bool) -> None:
    err, sent, retries = _fail(page(200, PORTAL, "text/html; charset=utf-8"), anthropic=anthropic)
    assert sent == 1 and retries == []  # not retried, not replayed
    text = str(err)
    assert "HTTP 200" in text and "'text/html; charset=utf-8'" in text
    assert "<!DOCTYPE html><html><head><title>Welcome to Airport Wi-Fi" in text
    assert "cut" not in text
    assert isinstance(err, StreamProtocolError)  # deterministic: the agent does not continue
    assert isinstance(err, UnexpectedResponseError)
    assert err.content_type == "text/html; charset=utf-8" and err.head.startswith("<!DOCTYPE html>")


def test_a_redirect_names_where_it_points_and_a_long_page_is_cut_in_the_message() -> None:
    err, sent, retries = _fail(page(302, "", "text/html", {"Location": "http://portal.example/login"}))
    assert sent == 1 and retries == []
    assert "HTTP 302 to 'http://portal.example/login'" in str(err)
    err, _, _ = _fail(page(200, "x" * 10_000, "text/plain"))
    assert "'text/plain'" in str(err) and len(err.head) == 200 and len(str(err)) < 600


def test_streams_json_and_unlabelled_bodies_are_still_read() -> None:
    good = sse_lines(
        [
            {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
        ]
    )

    async def go(handler: Handler) -> str:
        async with LoopbackServer([handler]) as srv:
            p = OpenAICompatible(srv.base_url, "k", "m", retry=FAST)
            try:
                return (await collect(p.stream(REQ))).text
            finally:
                await p.aclose()

    assert asyncio.run(go(sse(good))) == "ok"
    message = {"role": "assistant", "content": "ok"}
    whole = json.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    assert asyncio.run(go(page(200, whole, "application/json"))) == "ok"
    assert asyncio.run(go(page(200, good.decode(), None))) == "ok"
