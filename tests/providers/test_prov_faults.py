"""Faults served by a real loopback HTTP server: retries, replays, cuts, stalls, bad data."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import Any

import pytest

from foldlog.errors import APIError, AuthError, ProviderError, ProviderTimeout, StreamInterrupted
from foldlog.providers import Chunk, OpenAICompatible, Request, RetryPolicy, collect
from foldlog.providers.collect import Completion
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import Handler, LoopbackServer, sse, status

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05)
KEY = "sk-very-secret-key-123456"
GOOD = sse_lines(
    [
        chunk_obj({"role": "assistant", "content": ""}),
        chunk_obj({"content": "Hel"}),
        chunk_obj({"content": "lo"}),
        chunk_obj({"content": ""}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 2}),
    ]
)
REQ = Request(messages=[{"role": "user", "content": "hi"}])


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[int, float, str]] = []

    def __call__(self, attempt: int, delay: float, reason: str) -> None:
        self.calls.append((attempt, delay, reason))


async def _run(
    handlers: Sequence[Handler], *, policy: RetryPolicy = FAST, stall: float = 120.0, **kw: Any
) -> tuple[Completion, LoopbackServer, Recorder]:
    rec = Recorder()
    async with LoopbackServer(handlers) as srv:
        p = OpenAICompatible(srv.base_url, KEY, "m", retry=policy, stall_timeout=stall, on_retry=rec, **kw)
        try:
            got = await collect(p.stream(REQ))
        finally:
            await p.aclose()
    return got, srv, rec


def run(handlers: Sequence[Handler], **kw: Any) -> tuple[Completion, LoopbackServer, Recorder]:
    return asyncio.run(_run(handlers, **kw))


def raises(
    exc: type[BaseException], handlers: Sequence[Handler], **kw: Any
) -> tuple[Any, LoopbackServer, Recorder]:
    box: dict[str, Any] = {}

    async def go() -> None:
        rec = Recorder()
        box["rec"] = rec
        async with LoopbackServer(handlers) as srv:
            box["srv"] = srv
            p = OpenAICompatible(srv.base_url, KEY, "m", retry=kw.pop("policy", FAST), on_retry=rec, **kw)
            chunks: list[Chunk] = []
            box["chunks"] = chunks
            try:
                async for c in p.stream(REQ):
                    chunks.append(c)
                    if c.kind == "error":
                        raise c.error
            finally:
                await p.aclose()

    with pytest.raises(exc) as info:
        asyncio.run(go())
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    return info.value, box["srv"], box["rec"]


# --- connect / headers phase -----------------------------------------------------------------


def test_429_honours_retry_after() -> None:
    got, srv, rec = run([status(429, '{"error":"slow down"}', {"Retry-After": "1"}), sse(GOOD)])
    assert got.text == "Hello" and got.finish_reason == "stop"
    assert len(srv.requests) == 2
    assert rec.calls == [(1, 1.0, "HTTP 429")]


def test_5xx_retried_with_backoff_then_succeeds() -> None:
    got, srv, rec = run([status(500), status(502), status(503), sse(GOOD)])
    assert got.text == "Hello"
    assert [c[0] for c in rec.calls] == [1, 2, 3]
    assert all(r == f"HTTP {s}" for (_, _, r), s in zip(rec.calls, (500, 502, 503), strict=True))
    # all four requests carried the same bytes
    assert len({r.body for r in srv.requests}) == 1 and len(srv.requests) == 4


def test_5xx_gives_up_after_max_retries_with_the_body() -> None:
    policy = RetryPolicy(max_retries=2, base_delay=0.01)
    err, srv, rec = raises(APIError, [status(500, '{"error":{"message":"overloaded"}}')], policy=policy)
    assert err.status == 500 and "overloaded" in err.body
    assert len(srv.requests) == 3 and len(rec.calls) == 2


def test_408_is_retried() -> None:
    got, srv, _ = run([status(408), sse(GOOD)])
    assert got.text == "Hello" and len(srv.requests) == 2


@pytest.mark.parametrize("code", [401, 403])
def test_auth_errors_are_not_retried_and_never_show_the_key(code: int) -> None:
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {KEY} (Bearer {KEY})"}})
    err, srv, rec = raises(AuthError, [status(code, echo)])
    assert len(srv.requests) == 1 and rec.calls == []
    assert f"HTTP {code}" in str(err) and "***" in str(err)
    assert srv.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_other_4xx_is_api_error_with_first_4_kib_of_body() -> None:
    body = json.dumps({"error": {"message": "bad request " + "x" * 10_000}})
    err, srv, rec = raises(APIError, [status(400, body)])
    assert err.status == 400 and len(err.body) == 4096 and err.body == body[:4096]
    assert len(srv.requests) == 1 and rec.calls == []


def test_network_errors_are_retried_then_reported() -> None:
    async def go() -> Recorder:
        rec = Recorder()
        async with LoopbackServer([sse(GOOD)]) as srv:
            url = srv.base_url
        # the server is gone: connections are refused
        p = OpenAICompatible(url, KEY, "m", retry=RetryPolicy(max_retries=3, base_delay=0.01), on_retry=rec)
        with pytest.raises(ProviderError, match="gave up after 3 retries") as info:
            await collect(p.stream(REQ))
        assert KEY not in str(info.value)
        await p.aclose()
        return rec

    rec = asyncio.run(go())
    assert [c[0] for c in rec.calls] == [1, 2, 3]
    assert all(c[2].startswith("network error (ConnectError") for c in rec.calls)


# --- cuts, stalls and damaged data -----------------------------------------------------------


def test_cut_before_output_is_replayed() -> None:
    first_content = GOOD.index(b"Hel")
    got, srv, rec = run([sse(GOOD, cut_at=first_content - 20), sse(GOOD)])
    assert got.text == "Hello" and len(srv.requests) == 2
    assert rec.calls[0][0] == 1 and rec.calls[0][2].startswith("replay: connection cut")


def test_cut_before_output_gives_up_after_three_replays() -> None:
    err, srv, rec = raises(ProviderError, [sse(GOOD, cut_at=0)])
    assert "before any output" in str(err) and not isinstance(err, StreamInterrupted)
    assert len(srv.requests) == 4 and len(rec.calls) == 3


def test_cut_after_output_raises_stream_interrupted_with_partial_text() -> None:
    cut = GOOD.index(b"lo") - 10  # after "Hel" was sent
    err, srv, rec = raises(StreamInterrupted, [sse(GOOD, cut_at=cut), sse(GOOD)])
    assert err.partial_text == "Hel" and len(srv.requests) == 1 and rec.calls == []


def test_clean_end_without_done_or_finish_reason_is_a_cut() -> None:
    cut = GOOD.index(b"lo") - 10
    err, _, _ = raises(StreamInterrupted, [sse(GOOD, cut_at=cut, chunked=False)])
    assert "without [DONE] or a finish reason" in str(err) and err.partial_text == "Hel"


def test_finish_reason_without_done_is_a_normal_end() -> None:
    payload = GOOD[: GOOD.index(b"data: [DONE]")]
    got, srv, _ = run([sse(payload)])
    assert got.text == "Hello" and got.finish_reason == "stop" and len(srv.requests) == 1


def test_stall_after_output_is_interrupted() -> None:
    stall = GOOD.index(b"lo") - 10
    err, _, _ = raises(StreamInterrupted, [sse(GOOD, stall_at=stall)], stall_timeout=1.0)
    assert "stalled" in str(err) and err.partial_text == "Hel"


def test_stall_before_output_is_replayed_then_times_out() -> None:
    policy = RetryPolicy(max_replays=1, base_delay=0.01)
    err, srv, rec = raises(ProviderTimeout, [sse(GOOD, stall_at=10)], stall_timeout=1.0, policy=policy)
    assert "stalled" in str(err) and len(srv.requests) == 2 and len(rec.calls) == 1


def test_stall_before_output_then_a_good_replay() -> None:
    got, srv, _ = run([sse(GOOD, stall_at=0), sse(GOOD)], stall=1.0)
    assert got.text == "Hello" and len(srv.requests) == 2


def test_malformed_json_after_output_interrupts() -> None:
    bad = GOOD.replace(b'{"content": "lo"}', b'{"content": "lo"', 1)
    err, _, _ = raises(StreamInterrupted, [sse(bad)])
    assert "malformed JSON" in str(err) and err.partial_text == "Hel"


def test_malformed_json_before_output_is_replayed() -> None:
    bad = b"data: {not json\n\n" + GOOD
    got, srv, rec = run([sse(bad), sse(GOOD)])
    assert got.text == "Hello" and len(srv.requests) == 2 and "malformed JSON" in rec.calls[0][2]


def test_error_object_mid_stream_is_fatal() -> None:
    payload = GOOD.replace(
        b"data: [DONE]", b'data: {"error":{"message":"Internal error","code":"server_error"}}\n\ndata: [DONE]'
    )
    payload = payload.replace(b'"finish_reason": "stop"', b'"finish_reason": null')
    err, srv, _ = raises(APIError, [sse(payload)])
    assert "Internal error" in str(err) and "server_error" in str(err) and len(srv.requests) == 1


# --- stream shapes ---------------------------------------------------------------------------


def test_think_block_in_content_is_reasoning_even_split_across_pieces() -> None:
    pieces = ["<th", "ink>", "let me ", "think</", "thi", "nk>", "\n\n", "The answer", " is 4."]
    objs = [chunk_obj({"content": p}) for p in pieces] + [chunk_obj({}, finish="stop")]
    got, _, _ = run([sse(sse_lines(objs), piece=3)])
    assert got.reasoning == "let me think"
    assert got.text == "The answer is 4."


def test_content_starting_with_a_lookalike_tag_stays_text() -> None:
    objs = [chunk_obj({"content": p}) for p in ["<th", "ese> are", " <think>x</think>"]]
    got, _, _ = run([sse(sse_lines([*objs, chunk_obj({}, finish="stop")]))])
    assert got.text == "<these> are <think>x</think>" and got.reasoning == ""


def test_length_finish_with_empty_content_and_no_calls() -> None:
    objs = [chunk_obj({"content": ""}, finish="length", usage={"prompt_tokens": 9, "completion_tokens": 50})]
    got, _, _ = run([sse(sse_lines(objs))])
    assert got.finish_reason == "length" and got.text == "" and not got.tool_calls


def test_interleaved_parallel_calls_and_missing_ids() -> None:
    def call(i: int, **f: Any) -> dict[str, Any]:
        return chunk_obj({"tool_calls": [{"index": i, "function": f}]})

    objs = [
        call(1, name="b", arguments=""),
        call(0, name="a", arguments='{"x":'),
        call(1, arguments='{"y": 2}'),
        call(0, arguments=" 1}"),
        call(2, name="c"),
        chunk_obj({}, finish="tool_calls"),
        chunk_obj(None, usage={"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 4}}),
    ]
    got, _, _ = run([sse(sse_lines(objs))])
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == [
        ("call_0", "a", '{"x": 1}'),
        ("call_1", "b", '{"y": 2}'),
        ("call_2", "c", "{}"),
    ]
    assert [s.name for s in got.started] == ["b", "a", "c"]  # announced as the names stream in
    assert got.usage is not None and (got.usage.cache_hit_tokens, got.usage.cache_miss_tokens) == (4, 6)


def test_non_streaming_json_answer_is_accepted() -> None:
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]
    }
    got, _, _ = run([status(200, json.dumps(body))])
    assert got.text == "hi" and got.finish_reason == "stop"


def test_request_body_is_byte_stable_and_carries_options() -> None:
    async def go() -> list[Any]:
        async with LoopbackServer([sse(GOOD)]) as srv:
            p = OpenAICompatible(
                srv.base_url, KEY, "m", extra_body={"top_p": 0.5}, headers={"X-Org": "o"}, max_tokens=77
            )
            tools = [{"name": "zeta", "parameters": {}}, {"type": "function", "function": {"name": "alpha"}}]
            req = Request(
                messages=REQ.messages, tools=tools, temperature=0.2, params={"seed": 1, "stop": None}
            )
            await collect(p.stream(req))
            await collect(p.stream(req))
            await p.aclose()
            return srv.requests

    reqs = asyncio.run(go())
    assert reqs[0].body == reqs[1].body
    body = reqs[0].json()
    assert [t["function"]["name"] for t in body["tools"]] == ["alpha", "zeta"]
    assert body["max_tokens"] == 77 and body["temperature"] == 0.2 and body["top_p"] == 0.5
    assert body["seed"] == 1 and "stop" not in body
    assert reqs[0].headers["x-org"] == "o" and reqs[0].path == "/v1/chat/completions"


def test_repr_and_errors_never_show_secrets() -> None:
    p = OpenAICompatible(
        "https://example.invalid/v1", KEY, "m", headers={"Authorization": "Bearer other-secret"}
    )
    assert KEY not in repr(p) and "other-secret" not in repr(p)
    assert p.redact(f"x {KEY} y Bearer other-secret z") == "x *** y Bearer *** z"


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAICompatible("api.example.com", None, "m")
    with pytest.raises(ValueError, match="model is required"):
        OpenAICompatible("http://x", None, None)
    with pytest.raises(ValueError, match="tool name"):
        from foldlog.providers.http.openai_compat import normalize_tools

        normalize_tools([{"name": ""}])


def test_retry_schedule() -> None:
    p = RetryPolicy(jitter=0.0)
    assert [p.backoff(n) for n in range(1, 8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    jittered = RetryPolicy()
    assert all(0.5 <= jittered.backoff(1) <= 0.55 for _ in range(50))
    assert p.delay(3, {"retry-after": "120"}) == 15.0
    assert p.delay(3, {"retry-after-ms": "250"}) == 0.25
    assert p.delay(3, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert p.delay(2, {"retry-after": "soon"}) == 1.0


def test_json_answer_cut_before_its_end_is_replayed() -> None:
    body = {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}]
    }
    data = json.dumps(body).encode()

    async def short_body(req: Any, w: asyncio.StreamWriter) -> None:
        w.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
        )
        w.write(data[:10])
        await w.drain()

    got, srv, rec = run([short_body, status(200, json.dumps(body))])
    assert (
        got.text == "hi" and len(srv.requests) == 2 and rec.calls[0][2].startswith("replay: connection cut")
    )
