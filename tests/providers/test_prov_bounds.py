"""Bounds on what a server may send, served for real by the loopback server: a 50 MB line,
endless keep-alives or whitespace, a keep-alive trickle, an oversized JSON body, and 10 MB of
tool arguments streamed in small deltas through the agent."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from foldlog import Agent, Options, Session, tool
from foldlog.errors import ProviderTimeout, StreamInterrupted, StreamProtocolError
from foldlog.providers import OpenAICompatible, Request, RetryPolicy, collect
from foldlog.providers.http.assemble import ChatStreamAssembler
from foldlog.providers.http.sse import MAX_LINE_BYTES, MAX_NOISE_BYTES, SSEDecoder, SSEEvent
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import Handler, LoopbackServer, Received, sse, status

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05, max_replays=1)
REQ = Request(messages=[{"role": "user", "content": "hi"}])
HEL = sse_lines([chunk_obj({"content": "Hel"})], done=False)
MiB = 1024 * 1024


def streaming(prefix: bytes, body: Callable[[asyncio.StreamWriter], Awaitable[None]]) -> Handler:
    """An event stream (close-delimited) that sends ``prefix``, then whatever ``body`` writes."""

    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n" + prefix)
        await w.drain()
        await body(w)

    return handle


def endless(unit: bytes, *, pause: float = 0.0) -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    """Write ``unit`` over and over (in ~64 KiB writes, or one unit per ``pause``) until the client leaves."""
    block = unit * max(1, (64 * 1024) // len(unit)) if not pause else unit

    async def body(w: asyncio.StreamWriter) -> None:
        while True:
            w.write(block)
            await w.drain()
            await asyncio.sleep(pause)

    return body


def huge_line(size: int) -> Callable[[asyncio.StreamWriter], Awaitable[None]]:
    """One ``data:`` line of ``size`` bytes, written 1 MiB at a time from one reused block."""
    block = b"x" * MiB

    async def body(w: asyncio.StreamWriter) -> None:
        w.write(b"data: ")
        for _ in range(size // MiB):
            w.write(block)
            await w.drain()
        w.write(b"\n\n")
        await w.drain()

    return body


class Outcome:
    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.requests = 0
        self.retries: list[str] = []
        self.peak = 0


def serve(handlers: list[Handler], *, traced: bool = False, **kw: Any) -> Outcome:
    """Stream one completion from the loopback server; what it raised, and what it cost."""
    out = Outcome()

    async def go() -> None:
        async with LoopbackServer(handlers) as srv:
            p = OpenAICompatible(
                srv.base_url,
                None,
                "m",
                retry=kw.pop("retry", FAST),
                on_retry=lambda a, d, r: out.retries.append(r),
                **kw,
            )
            try:
                await collect(p.stream(REQ))
            except Exception as e:
                out.error = e
            finally:
                await p.aclose()
                out.requests = len(srv.requests)

    if traced:
        tracemalloc.start()
    try:
        asyncio.run(go())
        if traced:
            out.peak = tracemalloc.get_traced_memory()[1]
    finally:
        if traced:
            tracemalloc.stop()
    return out


# --- one line too long -------------------------------------------------------------------------


@pytest.mark.timeout(120)
@pytest.mark.parametrize("prefix", [b"", HEL], ids=["before output", "after output"])
def test_a_50_mb_line_is_refused_at_the_bound_without_buffering_it(prefix: bytes) -> None:
    out = serve([streaming(prefix, huge_line(50 * MiB))], traced=True)
    assert isinstance(out.error, StreamProtocolError)
    assert not isinstance(out.error, StreamInterrupted)  # not something the agent retries
    assert f"longer than {MAX_LINE_BYTES} bytes (max_line_bytes)" in str(out.error)
    assert out.requests == 1 and out.retries == []  # the same request would get the same line
    # the bound (8 MiB), a copy of it while the buffer grows and a few network pieces (about
    # 18 MB measured): far from the 50 MB sent
    assert out.peak < 3 * MAX_LINE_BYTES, f"peak traced memory {out.peak} bytes"


def test_the_line_bound_is_configurable_and_counts_an_events_data_lines_together() -> None:
    out = serve([streaming(b"", huge_line(2 * MiB))], max_line_bytes=MiB)
    assert isinstance(out.error, StreamProtocolError) and "longer than 1048576 bytes" in str(out.error)
    # many short data lines of one event add up to the same bound
    lines = b"data: " + b"y" * 1000 + b"\n"
    out = serve([streaming(b"", endless(lines))], max_line_bytes=MiB)
    assert isinstance(out.error, StreamProtocolError)
    assert "an event longer than 1048576 bytes" in str(out.error)
    # and a line within the bound still decodes
    big = json.dumps("z" * (MiB // 2))
    payload = (
        b'data: {"choices":[{"index":0,"delta":{"content":'
        + big.encode()
        + b'},"finish_reason":"stop"}]}\n\n'
    )

    async def go() -> str:
        async with LoopbackServer([sse(payload, piece=4096)]) as srv:
            async with OpenAICompatible(srv.base_url, None, "m", max_line_bytes=MiB) as p:
                return (await collect(p.stream(REQ))).text

    assert asyncio.run(go()) == "z" * (MiB // 2)


def test_the_agent_ends_the_turn_on_a_bound_without_continuing() -> None:
    session = Session()

    async def go() -> int:
        async with LoopbackServer([streaming(HEL, huge_line(2 * MiB))]) as srv:
            async with OpenAICompatible(srv.base_url, None, "m", retry=FAST, max_line_bytes=MiB) as p:
                with pytest.raises(StreamProtocolError, match="max_line_bytes"):
                    await Agent(p, session=session).run("hi")
            return len(srv.requests)

    assert asyncio.run(go()) == 1  # no "continue" retry, unlike a cut connection
    [partial] = [e["data"] for e in session.events if e["type"] == "assistant/message"]
    assert partial["message"]["content"] == "Hel" and partial["interrupted"] is True
    end = session.events[-1]["data"]
    assert end["reason"]["kind"] == "error" and "StreamProtocolError" in end["reason"]["message"]


def test_an_oversized_json_body_is_refused() -> None:
    body = json.dumps({"choices": [{"index": 0, "message": {"content": "w" * (3 * MiB)}}]})
    out = serve([status(200, body)], max_line_bytes=MiB)
    assert isinstance(out.error, StreamProtocolError)
    assert "JSON response body is longer than 1048576 bytes" in str(out.error)
    assert out.requests == 1


# --- endless noise -----------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_endless_keepalives_end_with_an_error_at_the_default_bound() -> None:
    out = serve([streaming(b"", endless(b": keepalive\n\n"))], traced=True)
    assert isinstance(out.error, StreamProtocolError)
    assert f"more than {MAX_NOISE_BYTES} bytes of keep-alives, comments or blank lines" in str(out.error)
    assert "without an event (max_noise_bytes)" in str(out.error)
    assert out.requests == 1 and out.retries == []  # not replayed
    assert out.peak < 4 * MiB, f"peak traced memory {out.peak} bytes"


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "unit",
    [b": keepalive\n\n", b"\n", b"   \r\n", b"event: ping\n\n"],
    ids=["comments", "blank lines", "whitespace lines", "events without data"],
)
@pytest.mark.parametrize("prefix", [b"", HEL], ids=["before output", "after output"])
def test_endless_noise_of_any_kind_meets_the_bound(unit: bytes, prefix: bytes) -> None:
    out = serve([streaming(prefix, endless(unit))], max_noise_bytes=64 * 1024)
    assert isinstance(out.error, StreamProtocolError)
    assert not isinstance(out.error, StreamInterrupted)  # after output too: not continued
    assert "more than 65536 bytes of keep-alives" in str(out.error)
    assert out.requests == 1 and out.retries == []


@pytest.mark.timeout(120)
def test_endless_spaces_without_a_line_end_meet_the_line_bound() -> None:
    out = serve([streaming(b"", endless(b" " * 1024))], max_line_bytes=MiB)
    assert isinstance(out.error, StreamProtocolError) and "(max_line_bytes)" in str(out.error)


@pytest.mark.timeout(60)
def test_a_keepalive_trickle_meets_the_idle_timeout() -> None:
    # bytes every 50 ms keep the byte watchdog quiet; only output resets the idle one
    trickle = endless(b": keepalive\n\n", pause=0.05)
    t0 = time.monotonic()
    out = serve([streaming(b"", trickle)], idle_timeout=0.5)
    assert isinstance(out.error, ProviderTimeout)
    assert "no output for 0.5 s (idle_timeout)" in str(out.error)
    assert out.requests == 2 and len(out.retries) == 1  # a stall: replayed like one
    assert time.monotonic() - t0 < 10
    out = serve([streaming(HEL, trickle)], idle_timeout=0.5)
    assert isinstance(out.error, StreamInterrupted) and out.error.partial_text == "Hel"
    assert "idle_timeout" in str(out.error)


@pytest.mark.timeout(60)
def test_blank_lines_before_a_json_body_meet_the_idle_timeout() -> None:
    # DeepSeek keeps a queued non-streamed request alive with blank lines
    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n")
        await endless(b"\n", pause=0.05)(w)

    out = serve([handle], idle_timeout=0.5)
    assert isinstance(out.error, ProviderTimeout)
    assert "no complete JSON body in 0.5 s (idle_timeout)" in str(out.error)
    assert out.requests == 2 and len(out.retries) == 1


def test_bad_bounds_are_named() -> None:
    with pytest.raises(ValueError, match="max_line_bytes must be >= 1"):
        OpenAICompatible("http://x", None, "m", max_line_bytes=0)
    with pytest.raises(ValueError, match="max_noise_bytes must be >= 1"):
        SSEDecoder(max_noise_bytes=-1)
    with pytest.raises(ValueError, match="idle_timeout must be positive"):
        OpenAICompatible("http://x", None, "m", idle_timeout=0)


def test_decoder_bounds_unit() -> None:
    d = SSEDecoder(max_line_bytes=100, max_noise_bytes=50)
    # an event at the bound is fine, and an event resets the noise count
    assert d.feed(b": " + b"k" * 40 + b"\n" + b"data: " + b"a" * 93 + b"\n\n") == [SSEEvent("a" * 93)]
    assert d.feed(b": " + b"k" * 40 + b"\n") == []
    with pytest.raises(StreamProtocolError, match="max_noise_bytes"):
        d.feed(b": " + b"k" * 10 + b"\n")
    d = SSEDecoder(max_line_bytes=100)
    d.feed(b"data: " + b"b" * 90)  # no line end yet: within the bound
    with pytest.raises(StreamProtocolError, match="a line longer than 100 bytes"):
        d.feed(b"b" * 10)
    unbounded = SSEDecoder(max_line_bytes=None, max_noise_bytes=None)
    assert unbounded.feed(b"\n" * 10_000 + b"data: " + b"c" * 1000 + b"\n\n") == [SSEEvent("c" * 1000)]


# --- 10 MB of tool arguments -------------------------------------------------------------------

ARG_BYTES = 10 * 1000 * 1000
DELTA = 2048


def big_call_stream(text: str) -> bytes:
    """A tool call whose JSON arguments carry ``text``, streamed ``DELTA`` characters at a time."""
    args = json.dumps({"text": text})
    frags = [{"index": 0, "id": "call_big", "type": "function", "function": {"name": "put", "arguments": ""}}]
    objs = [chunk_obj({"role": "assistant", "tool_calls": frags})]
    for i in range(0, len(args), DELTA):
        piece = args[i : i + DELTA]
        objs.append(chunk_obj({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    objs.append(chunk_obj({}, finish="tool_calls"))
    return sse_lines(objs)


def run_big_call(options: Options) -> tuple[Session, list[int], float]:
    text = "0123456789" * (ARG_BYTES // 10)
    received: list[int] = []

    @tool
    def put(text: str) -> str:
        received.append(len(text))
        return f"stored {len(text)} characters"

    final = sse_lines([chunk_obj({"content": "done"}, finish="stop")])
    session = Session()

    async def go() -> float:
        async with LoopbackServer([sse(big_call_stream(text), piece=64 * 1024), sse(final)]) as srv:
            async with OpenAICompatible(srv.base_url, None, "m", retry=FAST) as p:
                t0 = time.monotonic()
                assert await Agent(p, [put], session, options).run("write it") == "done"
                return time.monotonic() - t0

    took = asyncio.run(go())
    return session, received, took


@pytest.mark.timeout(300)
def test_10_mb_of_tool_arguments_in_small_deltas_run_the_tool() -> None:
    session, received, took = run_big_call(Options(tool_argument_limit=16 * MiB))
    assert received == [ARG_BYTES]
    [logged] = [e["data"] for e in session.events if e["type"] == "tool/call"]
    assert len(logged["arguments"]) == ARG_BYTES + len('{"text": ""}')
    assert json.loads(logged["arguments"])["text"][:20] == "01234567890123456789"
    [result] = [e["data"]["message"] for e in session.events if e["type"] == "tool/result"]
    assert result["content"] == f"stored {ARG_BYTES} characters" and not result["isError"]
    # ~4,900 deltas: assembling them is linear (joined once), so this takes seconds, not minutes
    assert took < 60, f"took {took:.1f} s"


@pytest.mark.timeout(300)
def test_10_mb_of_tool_arguments_over_the_default_limit_are_an_error_result() -> None:
    session, received, _ = run_big_call(Options())
    assert received == []
    [result] = [e["data"]["message"] for e in session.events if e["type"] == "tool/result"]
    size = ARG_BYTES + len('{"text": ""}')
    assert result["isError"] and result["content"].startswith(
        f"error: the arguments for put are {size} bytes, over the limit of {4 * MiB} bytes"
    )
    # the loop went on: the model got the error and answered
    assert session.events[-1]["type"] == "turn/end"
    assert session.events[-1]["data"]["reason"]["kind"] == "completed"


def test_assembling_many_argument_deltas_is_linear() -> None:
    def assemble(n: int) -> float:
        asm = ChatStreamAssembler()
        asm.feed(chunk_obj({"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f"}}]}))
        piece = {"tool_calls": [{"index": 0, "function": {"arguments": "a" * 100}}]}
        obj = chunk_obj(piece)
        t0 = time.perf_counter()
        for _ in range(n):
            asm.feed(obj)
        [call] = asm.tool_calls()
        took = time.perf_counter() - t0
        assert len(call.arguments) == 100 * n
        return took

    small, large = min(assemble(5_000) for _ in range(3)), min(assemble(50_000) for _ in range(3))
    # 10x the pieces: about 10x the time (quadratic joining would be ~100x)
    assert large < small * 30, f"{small:.4f} s for 5k pieces, {large:.4f} s for 50k"
