"""Recorded Anthropic Messages API bodies (../shared/corpus/anthropic), served byte for byte by a
loopback HTTP server through `foldlog.providers.Anthropic`, whole and in small writes; and the
requests foldlog builds, checked against the recorded request bodies."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from foldlog.errors import APIError, AuthError
from foldlog.log.session import Session
from foldlog.providers import Anthropic, Request, RetryPolicy, collect
from foldlog.providers.anthropic.stream import STOP_REASONS
from foldlog.providers.collect import Completion
from tests.conftest import SHARED
from tests.support.http_server import LoopbackServer, sse, status

ANTHROPIC = SHARED.joinpath("corpus", "anthropic")
SSE_FILES = sorted(ANTHROPIC.rglob("*.response.sse"))
JSON_FILES = sorted(p for p in ANTHROPIC.rglob("*.response.json") if "error-" not in p.name)
REQUEST_FILES = sorted(ANTHROPIC.rglob("*.request.json"))
KEY = "sk-ant-test-key-0123456789"
HI = Request(messages=[{"role": "user", "content": "hi"}])


def _frames(payload: bytes) -> list[dict[str, Any]]:
    """The stream's events read the plain way (whole payload, split on blank lines)."""
    out = []
    for block in payload.decode().split("\n\n"):
        lines = block.split("\n")
        data = [ln[6:] for ln in lines if ln.startswith("data: ")]
        event = [ln[7:] for ln in lines if ln.startswith("event: ")]
        if data:
            obj = json.loads("\n".join(data))
            assert obj["type"] == event[0]
            out.append(obj)
    return out


def _oracle(message: dict[str, Any]) -> dict[str, Any]:
    """What a complete message object says (the non-streamed shape), to compare against."""
    content = message["content"]
    usage = message["usage"]
    return {
        "text": "".join(b["text"] for b in content if b["type"] == "text"),
        "reasoning": "".join(b["thinking"] for b in content if b["type"] == "thinking"),
        "blocks": [
            {"type": "thinking", "thinking": b["thinking"], "signature": b["signature"]}
            if b["type"] == "thinking"
            else {"type": "redacted_thinking", "data": b["data"]}
            for b in content
            if b["type"] in ("thinking", "redacted_thinking")
        ],
        "calls": [(b["id"], b["name"], b["input"]) for b in content if b["type"] == "tool_use"],
        "finish": STOP_REASONS[message["stop_reason"]],
        "prompt": usage["input_tokens"]
        + (usage.get("cache_read_input_tokens") or 0)
        + (usage.get("cache_creation_input_tokens") or 0),
        "hit": usage.get("cache_read_input_tokens") or 0,
        "write": usage.get("cache_creation_input_tokens") or 0,
        "output": usage["output_tokens"],
    }


def _stream_message(payload: bytes) -> dict[str, Any]:
    """The message a stream builds, assembled plainly from its frames (the oracle's input)."""
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    for ev in _frames(payload):
        if ev["type"] == "message_start":
            message = dict(ev["message"])
            message["usage"] = dict(message["usage"])
        elif ev["type"] == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"])
            if blocks[ev["index"]]["type"] == "tool_use":
                blocks[ev["index"]]["json"] = ""
        elif ev["type"] == "content_block_delta":
            b, d = blocks[ev["index"]], ev["delta"]
            if d["type"] == "text_delta":
                b["text"] += d["text"]
            elif d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["signature"] += d["signature"]
            elif d["type"] == "input_json_delta":
                b["json"] += d["partial_json"]
        elif ev["type"] == "message_delta":
            message.update(ev["delta"])
            message["usage"].update({k: v for k, v in ev["usage"].items() if v is not None})
    for b in blocks.values():
        if b["type"] == "tool_use":
            b["input"] = json.loads(b.pop("json") or "{}")
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


async def _serve(handler: Any, request: Request = HI, **kw: Any) -> tuple[Completion, LoopbackServer]:
    async with LoopbackServer([handler]) as srv:
        provider = Anthropic(KEY, "claude-test", srv.base_url, **kw)
        try:
            got = await collect(provider.stream(request))
        finally:
            await provider.aclose()
    return got, srv


def _check(got: Completion, want: dict[str, Any]) -> None:
    assert got.text == want["text"]
    assert got.reasoning == want["reasoning"]
    assert got.thinking_blocks == want["blocks"]
    assert [(c.id, c.name, json.loads(c.arguments)) for c in got.tool_calls] == want["calls"]
    assert [s.name for s in got.started] == [c[1] for c in want["calls"]]
    assert got.finish_reason == want["finish"]
    u = got.usage
    assert u is not None
    assert (u.prompt_tokens, u.cache_hit_tokens, u.cache_write_tokens) == (
        want["prompt"],
        want["hit"],
        want["write"],
    )
    assert u.completion_tokens == want["output"]


def test_corpus_present() -> None:
    assert len(SSE_FILES) == 8, SSE_FILES
    assert len(JSON_FILES) == 7, JSON_FILES
    assert len(REQUEST_FILES) == 17, REQUEST_FILES


@pytest.mark.parametrize("path", SSE_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
@pytest.mark.parametrize("split", ["whole", "pieces"])
def test_recorded_stream_assembles(path: Path, split: str) -> None:
    payload = path.read_bytes()
    piece = 0 if split == "whole" else (7 if len(payload) < 8_000 else 61)
    got, srv = asyncio.run(_serve(sse(payload, piece=piece)))
    _check(got, _oracle(_stream_message(payload)))
    req = srv.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == KEY and req.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in req.headers


@pytest.mark.parametrize("path", JSON_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_json_message_assembles(path: Path) -> None:
    body = path.read_text()
    got, _ = asyncio.run(_serve(status(200, body)))
    _check(got, _oracle(json.loads(body)))


def test_thinking_tool_use_stream_keeps_the_signed_block() -> None:
    payload = (ANTHROPIC / "llm-anthropic" / "thinking-tool-use-stream__00.response.sse").read_bytes()
    got, _ = asyncio.run(_serve(sse(payload, piece=5)))
    assert got.finish_reason == "tool_calls"
    assert [c.name for c in got.tool_calls] == ["fixed_version"] and got.tool_calls[0].arguments == "{}"
    (block,) = got.thinking_blocks
    assert block["type"] == "thinking" and block["signature"].startswith("EoQDCm0I")
    assert block["thinking"] == got.reasoning
    assert got.usage is not None and got.usage.reasoning_tokens > 0


def test_redacted_thinking_blocks_arrive_whole_between_pings() -> None:
    payload = (ANTHROPIC / "pydantic-ai" / "redacted-thinking-stream.response.sse").read_bytes()
    got, _ = asyncio.run(_serve(sse(payload, piece=3)))
    assert [b["type"] for b in got.thinking_blocks] == ["redacted_thinking", "redacted_thinking"]
    assert all(len(b["data"]) > 100 for b in got.thinking_blocks)
    assert got.text and got.reasoning == ""


def test_stop_sequence_and_max_tokens_finish() -> None:
    stop = (ANTHROPIC / "llm-anthropic" / "stop-sequence-stream.response.sse").read_bytes()
    got, _ = asyncio.run(_serve(sse(stop)))
    assert got.finish_reason == "stop"
    cut = (ANTHROPIC / "mirascope" / "max-tokens-stream.response.sse").read_bytes()
    got, _ = asyncio.run(_serve(sse(cut, piece=11)))
    assert got.finish_reason == "length" and got.text


def test_cache_usage_read_and_write() -> None:
    body = (ANTHROPIC / "pydantic-ai" / "cache__01.response.json").read_text()
    got, _ = asyncio.run(_serve(status(200, body)))
    u = got.usage
    assert u is not None
    assert (u.cache_hit_tokens, u.cache_write_tokens, u.cache_miss_tokens) == (
        1111,
        418,
        u.prompt_tokens - 1529,
    )
    assert u.cache_hit_rate == pytest.approx(1111 / u.prompt_tokens)
    assert u.to_dict()["cacheWriteTokens"] == 418


def test_recorded_400_is_an_api_error_naming_the_problem() -> None:
    body = (ANTHROPIC / "pydantic-ai" / "error-400-invalid-request.response.json").read_text()
    with pytest.raises(APIError, match="invalid_request_error") as info:
        asyncio.run(_serve(status(400, body)))
    assert info.value.status == 400
    assert json.loads(body)["error"]["message"] in str(info.value)


def test_recorded_401_is_an_auth_error_without_the_key() -> None:
    body = (ANTHROPIC / "mirascope" / "error-401-authentication.response.json").read_text()
    with pytest.raises(AuthError, match="invalid x-api-key") as info:
        asyncio.run(_serve(status(401, body, {"x-should-retry": "false"}), retry=RetryPolicy(max_retries=0)))
    assert KEY not in str(info.value)


# --- the requests foldlog builds, against the recorded ones ----------------------------------


def _text_of(content: Any) -> Any:
    """A content value with its text blocks joined (how the log derives text-only content)."""
    if isinstance(content, list) and all(b.get("type") == "text" for b in content):
        return "\n".join(b["text"] for b in content)
    return content


def _to_chat(recorded: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded request's history as the chat-shaped messages foldlog's log keeps."""
    out: list[dict[str, Any]] = []
    system = recorded.get("system")
    if system:
        out.append({"role": "system", "content": _text_of(system)})
    for m in recorded["messages"]:
        blocks = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        if m["role"] == "assistant":
            msg: dict[str, Any] = {
                "role": "assistant",
                "content": _text_of([b for b in blocks if b["type"] == "text"]),
            }
            thinking = [b for b in blocks if b["type"] in ("thinking", "redacted_thinking")]
            if thinking:
                msg["thinking_blocks"] = thinking
            calls = [b for b in blocks if b["type"] == "tool_use"]
            if calls:
                msg["tool_calls"] = [
                    {
                        "id": b["id"],
                        "type": "function",
                        "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                    }
                    for b in calls
                ]
            out.append(msg)
            continue
        names = {c["id"]: c["function"]["name"] for o in out for c in o.get("tool_calls", [])}
        rest = [b for b in blocks if b["type"] != "tool_result"]
        for b in blocks:
            if b["type"] == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": b["tool_use_id"],
                        "name": names[b["tool_use_id"]],
                        "content": _text_of(b.get("content", "")),
                        "is_error": bool(b.get("is_error")),
                    }
                )
        if rest:
            out.append({"role": "user", "content": _text_of(rest)})
    return out


def _semantic(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with the differences that carry no meaning taken out: string content as one text
    block, text-only lists as one string, ``is_error: false``, ``cache_control``."""

    def block(b: dict[str, Any]) -> dict[str, Any]:
        b = {k: v for k, v in b.items() if k != "cache_control" and not (k == "is_error" and v is False)}
        if b["type"] == "tool_result" and "content" in b:
            b["content"] = _text_of(b["content"])
        return b

    out = []
    for m in messages:
        content = m["content"] if isinstance(m["content"], list) else [{"type": "text", "text": m["content"]}]
        out.append({"role": m["role"], "content": [block(b) for b in content]})
    return out


@pytest.mark.parametrize("path", REQUEST_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_built_request_matches_the_recorded_request(path: Path) -> None:
    recorded = json.loads(path.read_text())
    session = Session()
    for m in _to_chat(recorded):
        session.add(m)
    thinking = recorded.get("thinking")
    provider = Anthropic(KEY, recorded["model"], max_tokens=recorded["max_tokens"], thinking=thinking)
    tools = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description", ""),
                "parameters": t["input_schema"],
            },
        }
        for t in recorded.get("tools", [])
    ]
    body = json.loads(provider.encode_request(Request(messages=session.wire_messages(), tools=tools)))  # type: ignore[arg-type]
    assert _semantic(body["messages"]) == _semantic(recorded["messages"])
    assert body["model"] == recorded["model"] and body["max_tokens"] == recorded["max_tokens"]
    assert body["stream"] is True
    if thinking:
        assert body["thinking"] == thinking
    system = recorded.get("system")
    if system:
        text = system if isinstance(system, str) else "\n".join(b["text"] for b in system)
        assert [b["text"] for b in body["system"]] == [text]
    want_tools = sorted(recorded.get("tools", []), key=lambda t: t["name"])
    got_tools = [{k: v for k, v in t.items() if k != "cache_control"} for t in body.get("tools", [])]
    assert [t["name"] for t in got_tools] == [t["name"] for t in want_tools]
    assert [t["input_schema"] for t in got_tools] == [t["input_schema"] for t in want_tools]
    # the breakpoints: on the last tool, the system prompt and the last user turns, at most four
    marks = json.dumps(body).count('"cache_control"')
    assert 1 <= marks <= 4
    if want_tools:
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    last_user = [m for m in body["messages"] if m["role"] == "user"][-1]
    assert last_user["content"][-1]["cache_control"] == {"type": "ephemeral"}
