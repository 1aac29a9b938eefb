"""``foldlog run --provider anthropic`` against a loopback Messages API server."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldlog.log.session import Session
from tests.cli.cli_testlib import run_cli


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


class FakeAnthropic:
    """Serves ``/v1/messages`` with one recorded-shape stream; keeps each request's headers and body."""

    def __init__(self, payload: bytes) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(payload)
                self.wfile.flush()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture()
def server() -> Iterator[FakeAnthropic]:
    usage = {"input_tokens": 100, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 0,
             "output_tokens": 1}  # fmt: skip
    fake = FakeAnthropic(_stream("Pumpkin.", usage))
    try:
        yield fake
    finally:
        fake.close()


def test_run_with_the_anthropic_provider_shows_the_cache_hit_rate(
    tmp_path: Path, server: FakeAnthropic
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    args = [
        "--provider",
        "anthropic",
        "--base-url",
        server.base_url,
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
    headers, body = server.requests[0]
    assert headers["x-api-key"] == key and "anthropic-version" in headers
    assert body["model"] == "claude-x" and body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["tools"] and body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    (log,) = (tmp_path / "sessions").glob("*.jsonl")
    usage = [e["data"]["usage"] for e in Session.load(log).events if e["type"] == "assistant/message"]
    assert usage[0]["cacheHitTokens"] == 300 and usage[0]["cacheMissTokens"] == 100


def test_run_with_the_anthropic_provider_needs_a_key(tmp_path: Path, server: FakeAnthropic) -> None:
    proc = run_cli("run", "hi", "--provider", "anthropic", "--base-url", server.base_url, home=tmp_path)
    assert proc.returncode != 0 and "ANTHROPIC_API_KEY" in proc.stderr
    assert not server.requests
