"""DeepSeek: request shape (thinking, reasoning_content policy, stable bytes), pricing, env keys."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from foldlog import _core
from foldlog.cost.prices import Price, price_request
from foldlog.errors import AuthError
from foldlog.providers import DeepSeek, OpenAI, Request, Usage, collect
from tests.conftest import SHARED
from tests.support.chat_server import sse_lines
from tests.support.http_server import LoopbackServer, sse, status

PYDANTIC = SHARED.joinpath("corpus", "pydantic-ai-cassettes", "extracted")
THINKING_LOOP = "test_deepseek_deferred_capability_with_thinking__{:02d}.{}.json"


def _recorded(n: int, kind: str) -> Any:
    return json.loads((PYDANTIC / THINKING_LOOP.format(n, kind)).read_text())


def test_thinking_loop_request_history_is_sent_back_as_recorded() -> None:
    for n in (1, 2):
        recorded = _recorded(n, "request")["body"]
        ds = DeepSeek("sk-x", model=recorded["model"])
        body = ds.build_body(Request(messages=recorded["messages"], tools=recorded["tools"]))
        assert body["messages"] == recorded["messages"]  # reasoning_content kept on tool-call turns
        assert any("reasoning_content" in m for m in body["messages"])
        assert "thinking" not in body  # the legacy model names take no thinking parameters
        assert body["max_tokens"] == 4096


def test_thinking_loop_response_parses_parallel_calls_and_cache_usage() -> None:
    raw = (PYDANTIC / THINKING_LOOP.format(1, "response")).read_text()

    async def go() -> Any:
        async with LoopbackServer([status(200, raw)]) as srv:
            ds = DeepSeek("sk-x", base_url=srv.base_url)
            got = await collect(ds.stream(Request(messages=[{"role": "user", "content": "My guess is 4"}])))
            await ds.aclose()
            return got, srv.requests[0].json(), ds

    got, sent, ds = asyncio.run(go())
    assert [c.name for c in got.tool_calls] == ["get_player_name", "roll_dice"]
    assert [c.id for c in got.tool_calls] == [
        "call_00_6edlnw3Z1MgeMfey687g8451",
        "call_01_km02sac7sHxNDPATKLZy7705",
    ]
    assert got.reasoning.startswith("Great, now I have access")
    assert got.usage == Usage(875, 79, 0, 875, 26)
    assert sent["thinking"] == {"type": "enabled"} and sent["reasoning_effort"] == "high"
    assert sent["model"] == "deepseek-v4-flash"
    # the message to log carries reasoning_content; sent back, it stays on this tool-call turn
    msg = got.message()
    style = ds.wire_style()
    assert style is not None
    assert _core.styled_messages([msg], style)[0]["reasoning_content"] == got.reasoning


def test_reasoning_content_stripped_from_other_assistant_turns_and_when_thinking_is_off() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a", "reasoning_content": "r1"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "r2",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "ok"},
    ]
    on = DeepSeek("sk-x").build_body(Request(messages=history))["messages"]
    assert "reasoning_content" not in on[1] and on[2]["reasoning_content"] == "r2"
    off_ds = DeepSeek("sk-x", thinking=False)
    off = off_ds.build_body(Request(messages=history))
    assert all("reasoning_content" not in m for m in off["messages"])
    assert off["thinking"] == {"type": "disabled"} and "reasoning_effort" not in off
    no_reasoning = [dict(history[2])]
    no_reasoning[0].pop("reasoning_content")
    assert (
        DeepSeek("sk-x").build_body(Request(messages=no_reasoning))["messages"][0]["reasoning_content"] == ""
    )
    assert history[1]["reasoning_content"] == "r1"  # the caller's messages are not changed


def test_prefix_is_byte_stable_whatever_the_tool_and_key_order() -> None:
    ds = DeepSeek("sk-x", effort="max")
    t1 = {"type": "function", "function": {"name": "b", "parameters": {"type": "object", "properties": {}}}}
    t2 = {"type": "function", "function": {"parameters": {"properties": {}, "type": "object"}, "name": "a"}}
    m1 = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    m2 = [{"content": "s", "role": "system"}, {"content": "u", "role": "user"}]
    a = ds.encode_body(ds.build_body(Request(messages=m1, tools=[t1, t2])))
    b = ds.encode_body(ds.build_body(Request(messages=m2, tools=[t2, t1])))
    assert a == b
    assert json.loads(a)["reasoning_effort"] == "max"


def test_streamed_reply_is_priced_and_accounted() -> None:
    objs = [
        {"choices": [{"index": 0, "delta": {"reasoning_content": "hm"}}]},
        {"choices": [{"index": 0, "delta": {"content": "ok"}}]},
        {"choices": []},
        {
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "prompt_cache_hit_tokens": 768,
                      "prompt_cache_miss_tokens": 232, "completion_tokens_details": {"reasoning_tokens": 50}},
        },
    ]  # fmt: skip

    async def go() -> Any:
        async with LoopbackServer([sse(sse_lines(objs))]) as srv:
            ds = DeepSeek("sk-x", base_url=srv.base_url)
            got = await collect(ds.stream(Request(messages=[{"role": "user", "content": "x"}])))
            await ds.aclose()
            return got

    got = asyncio.run(go())
    assert got.text == "ok" and got.reasoning == "hm"
    u = got.usage
    assert u is not None and u.cache_hit_rate == pytest.approx(0.768)
    assert (u.prompt_tokens, u.cache_hit_tokens, u.cache_miss_tokens, u.reasoning_tokens) == (
        1000,
        768,
        232,
        50,
    )


def test_own_prices_and_context_windows() -> None:
    pro = DeepSeek("sk-x", model="deepseek-v4-pro")
    assert pro.context_window == 1_048_576
    assert pro.prices == {} and pro.price_provider == "deepseek"  # genai-prices prices the rest
    custom = DeepSeek("sk-x", prices={"deepseek-v4-flash": Price(input=0.5, output=1.0, cache_read=0.1)})
    cost = price_request(Usage(0, 1_000_000, 0, 0), "deepseek-v4-flash", prices=custom.prices)
    assert cost is not None and cost.total == pytest.approx(1.0)
    assert DeepSeek("sk-x", model="deepseek-chat").context_window == 131_072


def test_keys_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AuthError, match="DEEPSEEK_API_KEY"):
        DeepSeek()
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        OpenAI()
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-env-deepseek")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-openai")
    ds, oa = DeepSeek(), OpenAI()
    assert "sk-env" not in repr(ds) + repr(oa)
    assert ds.base_url == "https://api.deepseek.com" and oa.base_url == "https://api.openai.com/v1"


def test_beta_base_url_refuses_tools_and_bad_effort() -> None:
    beta = DeepSeek("sk-x", base_url="https://api.deepseek.com/beta")
    with pytest.raises(ValueError, match="/beta"):
        beta.build_body(Request(messages=[], tools=[{"name": "f"}]))
    beta.build_body(Request(messages=[]))  # without tools it is fine
    with pytest.raises(ValueError, match="effort"):
        DeepSeek("sk-x", effort="low")


def test_401_from_deepseek_is_auth_error() -> None:
    async def go() -> None:
        async with LoopbackServer([status(401, '{"error":{"message":"Authentication Fails"}}')]) as srv:
            ds = DeepSeek("sk-wrong-key-000", base_url=srv.base_url)
            try:
                await collect(ds.stream(Request(messages=[])))
            finally:
                await ds.aclose()

    with pytest.raises(AuthError, match="Authentication Fails") as info:
        asyncio.run(go())
    assert "sk-wrong-key-000" not in str(info.value)
