"""``foldlog run --provider anthropic`` against a loopback Messages API server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldlog.log.session import Session
from tests.cli.cli_testlib import run_cli
from tests.support.http_server import LoopbackServer, sse


def _stream(text: str, usage: dict[str, int]) -> bytes:
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                              "model": "claude-x", "content": [], "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}},
        {"type": "message_stop"},
    ]  # fmt: skip
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events)


@pytest.fixture()
def server() -> Iterator[LoopbackServer]:
    """Serves the Messages API with one recorded-shape stream; keeps each request."""
    usage = {"input_tokens": 100, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 0,
             "output_tokens": 1}  # fmt: skip
    with LoopbackServer(sse(_stream("Pumpkin.", usage), chunked=False)) as fake:
        yield fake


def test_run_with_the_anthropic_provider_shows_the_cache_hit_rate(
    tmp_path: Path, server: LoopbackServer
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    args = [
        "--provider",
        "anthropic",
        "--base-url",
        server.origin,
        "--model",
        "claude-x",
        "--workspace",
        str(ws),
    ]
    key = "sk-ant-cli-test-key-42"
    proc = run_cli("run", "secret word?", *args, home=tmp_path, extra_env={"ANTHROPIC_API_KEY": key})
    assert proc.returncode == 0, proc.stderr
    assert "Pumpkin." in proc.stdout
    assert "usage: 1 request(s), 400 prompt + 7 completion tokens, cache hit 75%" in proc.stderr
    headers, body = server.requests[0].headers, server.requests[0].json()
    assert headers["x-api-key"] == key and "anthropic-version" in headers
    assert body["model"] == "claude-x" and body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"] and body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    (log,) = (tmp_path / "sessions").glob("*.jsonl")
    usage = [e["data"]["usage"] for e in Session.load(log).events if e["type"] == "assistant/message"]
    assert usage[0]["cacheHitTokens"] == 300 and usage[0]["cacheMissTokens"] == 100


def test_run_with_the_anthropic_provider_needs_a_key(tmp_path: Path, server: LoopbackServer) -> None:
    proc = run_cli("run", "hi", "--provider", "anthropic", "--base-url", server.origin, home=tmp_path)
    assert proc.returncode != 0 and "ANTHROPIC_API_KEY" in proc.stderr
    assert not server.requests
