"""Real recorded streams, served byte for byte by a loopback HTTP server, through OpenAICompatible."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from foldlog.errors import APIError
from foldlog.providers import OpenAICompatible, Request, collect
from foldlog.providers.collect import Completion
from tests.conftest import SHARED
from tests.support.http_server import LoopbackServer, sse

LANGCHAINGO = SHARED.joinpath("corpus", "langchaingo-httprr")
PYDANTIC = SHARED.joinpath("corpus", "pydantic-ai-cassettes", "extracted")
VERCEL = SHARED.joinpath("corpus", "vercel-ai-sdk-fixtures")
OPENAI_PY = SHARED.joinpath("corpus", "openai-python-snapshots")

SSE_FILES = sorted(
    [
        *LANGCHAINGO.glob("*.response.sse"),
        *OPENAI_PY.glob("*.sse"),
        *(p for p in PYDANTIC.glob("*.response.sse") if "responses[" not in p.name),  # chat API only
    ]
)
CHUNK_FILES = sorted(p for p in VERCEL.rglob("*.chunks.txt") if "/chat/" in str(p) or "azure" in p.name)


def _wire(path: Path) -> bytes:
    raw = path.read_bytes()
    if path.name.endswith(".chunks.txt"):  # one JSON per line, no "data: " and no [DONE]
        return b"".join(b"data: " + line + b"\n\n" for line in raw.splitlines() if line.strip())
    return raw


def _oracle(payload: bytes) -> dict[str, Any]:
    """What the stream says, read the plain way (whole payload, no streaming) to compare against."""
    text, reasoning, usage, finish = [], [], None, None
    calls: dict[Any, Any] = {}
    for block in payload.decode().split("\n\n"):
        data = [ln[6:] for ln in block.split("\n") if ln.startswith("data: ")]
        if not data or data[0] == "[DONE]":
            continue
        obj = json.loads("\n".join(data))
        if "error" in obj:
            break
        usage = obj.get("usage") or usage
        for ch in obj.get("choices") or []:
            if ch.get("index", 0) != 0:
                continue
            d = ch.get("delta") or {}
            text.append((d.get("content") or "") + (d.get("refusal") or ""))
            reasoning.append((d.get("reasoning_content") or "") + (d.get("reasoning") or ""))
            for tc in d.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {"id": "", "name": "", "args": ""})
                c["id"] = c["id"] or tc.get("id") or ""
                fn = tc.get("function") or {}
                c["name"] = c["name"] or fn.get("name") or ""
                c["args"] += fn.get("arguments") or ""
            finish = ch.get("finish_reason") or finish
    return {
        "text": "".join(text),
        "reasoning": "".join(reasoning),
        "calls": [(c["id"], c["name"], c["args"] or "{}") for _, c in sorted(calls.items())],
        "usage": usage,
        "finish": finish,
    }


async def _replay(payload: bytes, piece: int) -> tuple[Completion, LoopbackServer]:
    async with LoopbackServer([sse(payload, piece=piece)]) as srv:
        provider = OpenAICompatible(srv.base_url, "sk-test", "m")
        try:
            got = await collect(provider.stream(Request(messages=[{"role": "user", "content": "hi"}])))
        finally:
            await provider.aclose()
    return got, srv


def test_corpus_present() -> None:
    assert len(SSE_FILES) >= 20, SSE_FILES
    assert len(CHUNK_FILES) >= 7, CHUNK_FILES


@pytest.mark.parametrize("path", SSE_FILES + CHUNK_FILES, ids=lambda p: p.name)
@pytest.mark.parametrize("split", ["whole", "pieces"])
def test_recorded_stream_assembles(path: Path, split: str) -> None:
    payload = _wire(path)
    # tiny writes split lines, JSON and UTF-8 everywhere; bigger ones keep long files quick
    piece = 0 if split == "whole" else (7 if len(payload) < 16_000 else 101)
    want = _oracle(payload)
    if b'"error"' in payload and b"event: error" in payload:
        with pytest.raises(APIError, match="tool_use_failed"):
            asyncio.run(_replay(payload, piece))
        return
    got, _ = asyncio.run(_replay(payload, piece))
    assert got.text == want["text"]
    assert got.reasoning == want["reasoning"]
    assert [(c.id, c.name, c.arguments) for c in got.tool_calls] == want["calls"]
    assert [s.name for s in got.started] == [c[1] for c in want["calls"]]
    if want["usage"]:
        assert got.usage is not None
        assert got.usage.prompt_tokens == want["usage"]["prompt_tokens"]
        assert got.usage.completion_tokens == want["usage"]["completion_tokens"]
    want_finish = {"function_call": "tool_calls"}.get(want["finish"], want["finish"])
    assert got.finish_reason == want_finish


def test_deepseek_parallel_tool_calls_with_cache_usage() -> None:
    payload = (LANGCHAINGO / "TestFunctionParallelCall-streaming-deepseek.response.sse").read_bytes()
    got, srv = asyncio.run(_replay(payload, 5))
    assert [c.name for c in got.tool_calls] == ["getCurrentWeather", "getCurrentTime"]
    for c in got.tool_calls:
        assert json.loads(c.arguments)["location"].startswith("Boston")
        assert c.id.startswith("call_")
    assert got.text.startswith("I can help you")
    assert got.finish_reason == "tool_calls"
    u = got.usage
    assert u is not None
    assert (u.prompt_tokens, u.completion_tokens, u.cache_hit_tokens, u.cache_miss_tokens) == (
        415,
        118,
        384,
        31,
    )
    body = srv.requests[0].json()
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert srv.requests[0].headers["authorization"] == "Bearer sk-test"


def test_deepseek_reasoner_reasoning_stream() -> None:
    payload = (PYDANTIC / "test_deepseek_model_thinking_stream__00.response.sse").read_bytes()
    got, _ = asyncio.run(_replay(payload, 101))
    assert len(got.reasoning) > 500 and got.text
    assert got.usage is not None
    assert got.usage.reasoning_tokens == 198
    assert (got.usage.cache_hit_tokens, got.usage.cache_miss_tokens) == (0, 6)
    assert got.finish_reason == "stop"


def test_openai_separate_usage_chunk_and_cached_tokens_field() -> None:
    payload = (PYDANTIC / "test_complex_agent_run__00.response.sse").read_bytes()
    got, _ = asyncio.run(_replay(payload, 0))
    assert got.usage is not None
    assert (got.usage.prompt_tokens, got.usage.completion_tokens) == (364, 40)
    assert (got.usage.cache_hit_tokens, got.usage.cache_miss_tokens) == (0, 364)
    assert len(got.tool_calls) >= 2  # parallel calls of gpt-4o


def test_glm_reasoning_content_stream() -> None:
    payload = (PYDANTIC / "test_zai_thinking_stream__00.response.sse").read_bytes()
    got, _ = asyncio.run(_replay(payload, 3))
    assert got.reasoning and got.text
    assert got.usage is not None and got.usage.reasoning_tokens == 561


def test_gpt_oss_error_event_after_reasoning() -> None:
    payload = (PYDANTIC / "test_tool_use_failed_error_streaming_with_text__00.response.sse").read_bytes()

    async def run() -> list[Any]:
        async with LoopbackServer([sse(payload)]) as srv:
            p = OpenAICompatible(srv.base_url, None, "m")
            chunks = [c async for c in p.stream(Request(messages=[]))]
            await p.aclose()
            return chunks

    chunks = asyncio.run(run())
    assert chunks[-1].kind == "error"
    assert "Tool choice is required" in str(chunks[-1].error)
    assert any(c.kind == "reasoning" for c in chunks)
    assert not any(c.kind == "done" for c in chunks)


def test_deepseek_v4_length_finish_with_reasoning_only() -> None:
    path = next(VERCEL.rglob("issue-19381-thinking-reasoning.chunks.txt"))
    got, _ = asyncio.run(_replay(_wire(path), 0))
    assert got.finish_reason == "length"
    assert got.text == "" and got.reasoning and not got.tool_calls
    assert got.usage is not None and got.usage.reasoning_tokens == 2


def test_azure_deepseek_top_level_reasoning_tokens_and_null_details() -> None:
    path = next(VERCEL.rglob("azure-deepseek-reasoning.1.chunks.txt"))
    got, _ = asyncio.run(_replay(_wire(path), 0))
    assert got.usage is not None
    assert (got.usage.prompt_tokens, got.usage.completion_tokens) == (19, 1720)
    assert got.usage.cache_hit_tokens == 0 and got.usage.cache_miss_tokens == 19
