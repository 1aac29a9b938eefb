"""The chunked request body (the core's cached message JSON) over a real loopback server: sent
with a Content-Length (never chunk-encoded), byte-identical to the Python encoding, resent
whole on a retry, and used by the agent loop."""

from __future__ import annotations

import asyncio

from foldlog import Agent, Session
from foldlog.log.wire import CHUNK_SIZE, ChunkedBody
from foldlog.providers import DeepSeek, Request, RetryPolicy, collect
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import LoopbackServer, sse, status

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05)
GOOD = sse_lines(
    [
        chunk_obj({"role": "assistant", "content": "Hi"}),
        chunk_obj({"content": ""}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 1}),
    ]
)


def long_session() -> Session:
    """More than one chunk of messages, with reasoning on calls (kept by DeepSeek's thinking mode)."""
    s = Session(system="You are terse. ✓")
    for i in range(60):
        s.add({"role": "user", "content": f"question {i}: " + "x" * 2500})
        s.add(
            {
                "role": "assistant",
                "content": "",
                "reasoning_content": f"thinking {i}",
                "tool_calls": [
                    {"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
                ],
            }
        )
        s.add({"role": "tool", "tool_call_id": f"c{i}", "name": "ls", "content": "a\nb"})
    return s


def test_the_chunked_body_is_sent_whole_with_a_content_length_and_resent_on_retry() -> None:
    s = long_session()

    async def go() -> tuple[LoopbackServer, bytes, ChunkedBody]:
        async with LoopbackServer([status(503, "{}"), sse(GOOD)]) as srv:
            p = DeepSeek(api_key="sk-test", base_url=srv.base_url, retry=FAST)
            wire = s.wire_request("with-calls")
            request = Request(messages=wire.messages, wire=wire)
            body = p.encode_request(request)
            assert isinstance(body, ChunkedBody)
            old = p.encode_body(p.build_body(Request(messages=s.wire_messages())))
            try:
                got = await collect(p.stream(request))
            finally:
                await p.aclose()
            assert got.text == "Hi"
            return srv, old, body

    srv, old, body = asyncio.run(go())
    assert len(old) > 2 * CHUNK_SIZE, "the body spans several pieces"
    assert len(srv.requests) == 2, "one retry after the 503"
    for r in srv.requests:
        assert r.headers.get("content-length") == str(len(old))
        assert "transfer-encoding" not in r.headers
        assert r.body == old
    assert body.to_bytes() == old
    assert '"reasoning_content":"thinking 3"' in old.decode()


def test_the_agent_sends_the_cached_body() -> None:
    s = Session(system="Be brief.")

    async def go() -> LoopbackServer:
        async with LoopbackServer([sse(GOOD)]) as srv:
            p = DeepSeek(api_key="sk-test", base_url=srv.base_url, retry=FAST)
            try:
                assert await Agent(p, session=s).run("hello") == "Hi"
            finally:
                await p.aclose()
            return srv

    srv = asyncio.run(go())
    (req,) = srv.requests
    assert req.headers.get("content-length") == str(len(req.body))
    sent = req.json()
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hello"},
    ]
    assert sent["model"] == "deepseek-v4-flash" and sent["stream"] is True
