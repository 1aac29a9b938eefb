"""Anthropic against a real loopback server: faults (529, 429, an error event in the stream, a cut),
a two-step agent run with tools and thinking (the bytes of the second request), prompt-cache
breakpoints across the requests of a run and after a fold, token counts."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Sequence
from typing import Any

import pytest

from foldlog import Agent, Session, tool
from foldlog.errors import (
    APIError,
    AuthError,
    ConfigError,
    InvalidEventError,
    ProviderError,
    StreamInterrupted,
)
from foldlog.providers import Anthropic, Request, RetryPolicy, collect
from foldlog.providers.anthropic.body import MAX_BREAKPOINTS
from foldlog.providers.collect import Completion
from tests.conftest import SHARED
from tests.providers.test_prov_anthropic import _semantic
from tests.support.http_server import Handler, LoopbackServer, sse, status

ANTHROPIC = SHARED.joinpath("corpus", "anthropic")
FAST = RetryPolicy(base_delay=0.01, max_delay=0.05)
KEY = "sk-ant-very-secret-key-123456"
HI = Request(messages=[{"role": "user", "content": "hi"}])
TEXT_STREAM = (ANTHROPIC / "llm-anthropic" / "parallel-tool-use-stream__01.response.sse").read_bytes()
OVERLOADED = (
    '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_x"}'
)
RATE_LIMITED = (
    '{"type":"error","error":{"type":"rate_limit_error","message":"slow down"},"request_id":"req_y"}'
)


def _error_event(kind: str = "overloaded_error") -> bytes:
    data = json.dumps({"type": "error", "error": {"type": kind, "message": "Overloaded", "details": None}})
    return f"event: error\ndata: {data}\n\n".encode()


def _head(payload: bytes, events: int) -> bytes:
    """The first ``events`` frames of a stream."""
    return b"".join(part + b"\n\n" for part in payload.split(b"\n\n")[:events])


class Retries:
    def __init__(self) -> None:
        self.calls: list[tuple[int, float, str]] = []

    def __call__(self, attempt: int, delay: float, reason: str) -> None:
        self.calls.append((attempt, delay, reason))


def body_of(provider: Anthropic, messages: Any, tools: Sequence[Any] = ()) -> dict[str, Any]:
    """The body ``provider`` sends for ``messages``, parsed."""
    raw = provider.encode_request(Request(messages=messages, tools=tools))
    assert isinstance(raw, bytes)
    parsed: dict[str, Any] = json.loads(raw)
    return parsed


def events_sse(events: Sequence[dict[str, Any]]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


async def _go(handlers: Sequence[Handler], **kw: Any) -> tuple[Completion, LoopbackServer, Retries]:
    rec = Retries()
    retry = kw.pop("retry", FAST)
    async with LoopbackServer(handlers) as srv:
        p = Anthropic(KEY, "claude-test", srv.base_url, retry=retry, on_retry=rec, **kw)
        try:
            got = await collect(p.stream(HI))
        finally:
            await p.aclose()
    return got, srv, rec


def run(handlers: Sequence[Handler], **kw: Any) -> tuple[Completion, LoopbackServer, Retries]:
    return asyncio.run(_go(handlers, **kw))


def fails(exc: type[BaseException], handlers: Sequence[Handler], **kw: Any) -> BaseException:
    with pytest.raises(exc) as info:
        run(handlers, **kw)
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    return info.value


# --- faults ----------------------------------------------------------------------------------


def test_529_overloaded_is_retried_after_retry_after() -> None:
    got, srv, rec = run([status(529, OVERLOADED, {"retry-after": "0.02"}), sse(TEXT_STREAM)])
    assert got.text and got.finish_reason == "stop"
    assert len(srv.requests) == 2 and srv.requests[0].body == srv.requests[1].body
    assert [(a, d, r) for a, d, r in rec.calls] == [(1, 0.02, "HTTP 529")]


def test_429_is_retried_with_retry_after_and_gives_up_with_the_body() -> None:
    got, _, rec = run([status(429, RATE_LIMITED, {"retry-after": "0.01"}), sse(TEXT_STREAM)])
    assert got.text and rec.calls[0][1] == 0.01
    err = fails(APIError, [status(429, RATE_LIMITED, {"retry-after": "0"})], retry=RetryPolicy(max_retries=2))
    assert isinstance(err, APIError) and err.status == 429 and "rate_limit_error" in str(err)


def test_error_event_before_output_is_replayed() -> None:
    start = _head(TEXT_STREAM, 1)  # message_start only: nothing forwarded yet
    got, srv, rec = run([sse(start + _error_event()), sse(TEXT_STREAM)])
    assert got.text and len(srv.requests) == 2
    assert "overloaded_error" in rec.calls[0][2] and rec.calls[0][2].startswith("replay")


def test_error_event_after_output_is_stream_interrupted_with_the_text_so_far() -> None:
    part = _head(TEXT_STREAM, 4)  # message_start, block start, two text deltas
    err = fails(StreamInterrupted, [sse(part + _error_event())])
    assert isinstance(err, StreamInterrupted) and err.partial_text
    assert "overloaded_error" in str(err)


def test_error_event_every_time_gives_up_after_the_replays() -> None:
    err = fails(ProviderError, [sse(_error_event())], retry=RetryPolicy(base_delay=0.0, max_replays=2))
    assert "3 attempts" in str(err) and "overloaded_error" in str(err)


def test_cut_stream_before_and_after_output() -> None:
    cut_early = TEXT_STREAM.index(b"content_block_start")
    got, srv, _ = run([sse(TEXT_STREAM, cut_at=cut_early), sse(TEXT_STREAM, piece=9)])
    assert got.text and len(srv.requests) == 2
    cut_late = TEXT_STREAM.index(b"message_delta")
    err = fails(StreamInterrupted, [sse(TEXT_STREAM, cut_at=cut_late, chunked=False)])
    assert isinstance(err, StreamInterrupted) and err.partial_text


def test_auth_errors_and_key_scrubbing() -> None:
    body = json.dumps({"type": "error", "error": {"type": "permission_error", "message": f"bad key {KEY}"}})
    err = fails(AuthError, [status(403, body)])
    assert "permission_error" in str(err) and "***" in str(err)
    err = fails(
        APIError, [status(400, '{"type":"error","error":{"type":"invalid_request_error","message":"no"}}')]
    )
    assert isinstance(err, APIError) and err.status == 400


def test_key_from_the_environment_and_bad_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(AuthError, match="ANTHROPIC_API_KEY"):
        Anthropic()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-key")
    a = Anthropic()
    assert "sk-ant-env" not in repr(a) and a.url == "https://api.anthropic.com/v1/messages"
    with pytest.raises(ConfigError, match="budget"):
        Anthropic(thinking=512)
    with pytest.raises(ConfigError, match="max_tokens"):
        Anthropic(thinking=8192, max_tokens=4096)
    with pytest.raises(ConfigError, match="cache_ttl"):
        Anthropic(cache_ttl="2h")


def test_thinking_blocks_are_checked_by_the_core() -> None:
    s = Session()
    with pytest.raises(InvalidEventError, match=r"thinking_blocks\[0\].signature is missing"):
        s.add(
            {"role": "assistant", "content": "a", "thinking_blocks": [{"type": "thinking", "thinking": "t"}]}
        )
    with pytest.raises(InvalidEventError, match="thinking_blocks"):
        s.add({"role": "assistant", "content": "a", "thinking_blocks": [{"type": "text", "text": "t"}]})
    s.add(
        {"role": "assistant", "content": "a", "thinking_blocks": [{"type": "redacted_thinking", "data": "x"}]}
    )


# --- a two-step run with tools and thinking --------------------------------------------------


@tool(read_only=True)
def fixed_version() -> str:
    """Return a fixed test version string"""
    return "0.32a0"


def test_two_step_run_sends_the_signed_thinking_block_and_the_tool_result_back() -> None:
    folder = ANTHROPIC / "llm-anthropic"
    first = (folder / "thinking-tool-use-stream__00.response.sse").read_bytes()
    second = (folder / "thinking-tool-use-stream__01.response.sse").read_bytes()
    recorded = json.loads((folder / "thinking-tool-use-stream__01.request.json").read_text())
    prompt = recorded["messages"][0]["content"][0]["text"]

    async def go() -> tuple[str, LoopbackServer, Session]:
        session = Session()
        async with LoopbackServer([sse(first, piece=13), sse(second, piece=13)]) as srv:
            provider = Anthropic(
                KEY,
                "claude-haiku-4-5-20251001",
                srv.base_url,
                max_tokens=64000,
                thinking=recorded["thinking"],
            )
            try:
                answer = await Agent(provider, [fixed_version], session).run(prompt)
            finally:
                await provider.aclose()
        return answer, srv, session

    answer, srv, session = asyncio.run(go())
    assert answer
    assert len(srv.requests) == 2
    sent = srv.requests[1].json()
    # the history goes back as the recorded client sent it: thinking block (signed) before the
    # tool_use, then the tool_result
    assert _semantic(sent["messages"]) == _semantic(recorded["messages"])
    thinking = sent["messages"][1]["content"][0]
    assert thinking == recorded["messages"][1]["content"][0]  # verbatim, signature included
    assert sent["thinking"] == recorded["thinking"]
    # the log keeps it
    assistant = next(m for m in session.derive_messages() if m["role"] == "assistant")
    assert assistant["thinking_blocks"][0]["signature"] == thinking["signature"]
    # the other wire styles leave it out (an OpenAI-compatible endpoint would refuse it)
    from foldlog import _core

    assert all(
        "thinking_blocks" not in m for m in _core.styled_messages(list(session.wire_messages()), "strip")
    )


# --- prompt caching ----------------------------------------------------------------------------


def _marks(body: dict[str, Any]) -> list[str]:
    """Where the breakpoints are: ``tools[i]``, ``system[i]``, ``messages[i].content[j]``."""
    out = [f"tools[{i}]" for i, t in enumerate(body.get("tools", [])) if "cache_control" in t]
    out += [f"system[{i}]" for i, b in enumerate(body.get("system", [])) if "cache_control" in b]
    for i, m in enumerate(body["messages"]):
        out += [f"messages[{i}].content[{j}]" for j, b in enumerate(m["content"]) if "cache_control" in b]
    return out


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def _prefix(body: dict[str, Any], upto: int) -> str:
    """The body's tools, system and first ``upto`` messages without their breakpoints, as text."""
    return json.dumps(_unmarked([body.get("tools"), body.get("system"), body["messages"][:upto]]))


def _last_blocks(body: dict[str, Any], n: int = 2) -> list[str]:
    """The places of the last blocks of the last ``n`` user messages."""
    users = [i for i, m in enumerate(body["messages"]) if m["role"] == "user"]
    return [f"messages[{i}].content[{len(body['messages'][i]['content']) - 1}]" for i in users[-n:]]


@tool(read_only=True)
def release(n: int) -> str:
    """The name of release number n."""
    return f"0.{n}"


def _tool_step(i: int) -> bytes:
    """A stream calling release(n=i) (cache reads growing by 2000 each step)."""
    return events_sse(
        [
            {
                "type": "message_start",
                "message": {
                    "id": f"msg_{i}",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 2000 * i,
                        "cache_creation_input_tokens": 300,
                        "output_tokens": 1,
                    },
                },
            },
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": "release", "input": {}},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"n": '},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": f"{i}}}"},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use", "stop_sequence": None},
                "usage": {"output_tokens": 12},
            },
            {"type": "message_stop"},
        ]
    )


def test_breakpoints_are_stable_across_the_requests_of_a_run() -> None:
    streams = [_tool_step(i) for i in range(3)] + [TEXT_STREAM]

    async def go() -> tuple[LoopbackServer, Session, Agent]:
        session = Session(system="You are terse.")
        async with LoopbackServer([sse(s) for s in streams]) as srv:
            provider = Anthropic(KEY, "claude-test", srv.base_url)
            agent = Agent(provider, [release], session)
            try:
                await agent.run("name releases 0, 1 and 2")
            finally:
                await provider.aclose()
        return srv, session, agent

    srv, session, _ = asyncio.run(go())
    bodies = [r.json() for r in srv.requests]
    assert len(bodies) == 4
    for n, body in enumerate(bodies):
        marks = _marks(body)
        assert len(marks) <= MAX_BREAKPOINTS
        assert marks[:2] == ["tools[0]", "system[0]"]
        assert marks[2:] == _last_blocks(body)
        if n:
            before = bodies[n - 1]
            # everything the previous request sent is sent again, byte for byte: the breakpoint
            # it wrote (its last user turn) is read now, and is this request's second-to-last
            assert _prefix(body, len(before["messages"])) == _prefix(before, len(before["messages"]))
            assert marks[2] == _marks(before)[-1]
    # the usage line's figures: hits, writes, rate
    usage = [e["data"]["usage"] for e in session.events if e["type"] == "assistant/message"]
    assert [u["cacheHitTokens"] for u in usage[:3]] == [0, 2000, 4000]
    assert all(u["cacheWriteTokens"] == 300 for u in usage[:3])


def test_breakpoints_move_with_the_new_prefix_after_a_fold_and_cache_false_sends_none() -> None:
    s = Session(system="sys")
    for i in range(4):
        s.add({"role": "user", "content": f"question {i}"})
        s.add({"role": "assistant", "content": f"answer {i}"})
    s.add({"role": "user", "content": "last question"})
    p = Anthropic(KEY, "claude-test")
    before = body_of(p, s.wire_messages())
    nodes = s.surface_nodes()
    folded = nodes[1:7]  # the first three exchanges
    s.append_event(
        "user/message",
        {"role": "user", "content": "digest of the first three exchanges"},
        surface_op={"op": "fold", "start": folded[0], "end": folded[-1], "keep": []},
        source_event_seqs=folded,
    )
    after = body_of(p, s.wire_messages())
    # the digest and the next user turn are one user message now
    assert [b["text"] for b in after["messages"][0]["content"]] == [
        "digest of the first three exchanges",
        "question 3",
    ]
    assert len(before["messages"]) == 9 and len(after["messages"]) == 3
    for body in (before, after):
        assert _marks(body) == ["system[0]", *_last_blocks(body)]
    assert _marks(before) == ["system[0]", "messages[6].content[0]", "messages[8].content[0]"]
    assert _marks(after) == ["system[0]", "messages[0].content[1]", "messages[2].content[0]"]
    assert body_of(p, s.wire_messages()) == after  # the same surface, the same body
    raw = Anthropic(KEY, "claude-test", cache=False).encode_request(Request(messages=s.wire_messages()))
    assert isinstance(raw, bytes) and b"cache_control" not in raw
    body = body_of(Anthropic(KEY, "claude-test", cache_ttl="1h"), s.wire_messages())
    assert body["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_mapping_of_images_documents_errors_and_system_blocks() -> None:
    s = Session(system="sys")
    s.add(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
                    "title": "a.pdf",
                },
            ],
        }
    )
    s.add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}},
                {"id": "c2", "type": "function", "function": {"name": "f", "arguments": "{bad"}},
            ],
        }
    )
    s.add({"role": "tool", "tool_call_id": "c1", "content": "boom", "is_error": True})
    s.add({"role": "tool", "tool_call_id": "c2", "content": "ok"})
    s.add({"role": "user", "content": "and?"})
    body = body_of(Anthropic(KEY, "m", cache=False), s.wire_messages())
    assert body["system"] == [{"type": "text", "text": "sys"}]
    user = body["messages"][0]["content"]
    assert user[1] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR"},
    }
    assert user[2] == {
        "type": "document",
        "title": "a.pdf",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBER"},
    }
    calls = body["messages"][1]["content"]
    assert [c["input"] for c in calls] == [{"x": 1}, {"arguments": "{bad"}]
    results = body["messages"][2]["content"]
    assert results[0] == {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": True}
    assert results[1] == {"type": "tool_result", "tool_use_id": "c2", "content": "ok"}
    assert results[2] == {"type": "text", "text": "and?"}  # the user message after the results joins them
    assert len(body["messages"]) == 3


def test_thinking_blocks_go_back_only_with_thinking_on() -> None:
    block = {"type": "thinking", "thinking": "hmm", "signature": "sig"}
    s = Session()
    s.add({"role": "user", "content": "q"})
    s.add({"role": "assistant", "content": "a", "reasoning_content": "hmm", "thinking_blocks": [block]})
    s.add({"role": "user", "content": "q2"})
    on = body_of(Anthropic(KEY, "m", thinking=True), s.wire_messages())
    off = body_of(Anthropic(KEY, "m"), s.wire_messages())
    assert on["messages"][1]["content"][0] == block
    assert on["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert off["messages"][1]["content"] == [{"type": "text", "text": "a"}] and "thinking" not in off


def test_token_count_is_an_estimate_anchored_on_reported_input_tokens() -> None:
    # the prompt the reply reports: 10 uncached + 20 read + 5 written = 35 tokens
    reply = events_sse(
        [
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "usage": {
                        "input_tokens": 10,
                        "cache_read_input_tokens": 20,
                        "cache_creation_input_tokens": 5,
                        "output_tokens": 1,
                    },
                },
            },
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Pelly."}},
            {"type": "content_block_stop", "index": 0},
            {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ]
    )

    async def go() -> Session:
        session = Session(system="You are terse.")
        async with LoopbackServer([sse(reply)]) as srv:
            provider = Anthropic(KEY, "claude-haiku-4-5", srv.base_url)
            try:
                await Agent(provider, [], session).run("A name for a pet pelican")
            finally:
                await provider.aclose()
        return session

    session = asyncio.run(go())
    model = "claude-haiku-4-5"
    assert session.token_count(model).exact is False
    sent = session.derive_messages()[:2]  # what the request carried: system and user
    chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in sent)
    assert session.tokenizer(model).count("x" * 1000) == math.ceil(1000 * (35 / chars))
