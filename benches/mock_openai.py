"""A small OpenAI-compatible chat-completions server for the B7 bench, on loopback only.

Stateless and deterministic: while the request's turn (the messages after its last user message)
holds fewer than ``STEPS - 1`` tool results it
answers with one call of the ``noop`` tool, then with a final text answer — so every session runs
exactly ``STEPS`` model calls whatever the client. Streams SSE chunks when ``"stream": true``,
else returns one JSON completion. Bounded: at most ``MAX_BODY`` bytes per request and
``MAX_CONNECTIONS`` open connections; it binds 127.0.0.1 only.

python benches/mock_openai.py [--steps 20]   # prints the port, serves until killed
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: the repo root

from tests.support.http_server import Handler, LoopbackServer, Received, write_response

MAX_BODY = 64 * 1024 * 1024
MAX_CONNECTIONS = 4096


def _chunk(cid: str, delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


def answer(request: dict[str, Any], steps: int) -> tuple[str, list[dict[str, Any]], str]:
    """(content, tool calls, finish reason) for this request."""
    # the tool results of this turn: those after the last user message (a session's earlier turns
    # are history; B10 runs turns on sessions that already hold some)
    done = 0
    for m in request.get("messages", []):
        role = m.get("role")
        done = 0 if role == "user" else done + (role == "tool")
    if done < steps - 1:
        call = {
            "id": f"call_{done}",
            "type": "function",
            "function": {"name": "noop", "arguments": json.dumps({"i": done})},
        }
        return "", [call], "tool_calls"
    return "done", [], "stop"


def response(request: dict[str, Any], steps: int) -> tuple[bytes, bytes]:
    """(content type, body)."""
    content, calls, finish = answer(request, steps)
    cid = "chatcmpl-mock"
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if not request.get("stream"):
        msg: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            msg["tool_calls"] = calls
        body = {
            "id": cid,
            "object": "chat.completion",
            "created": 0,
            "model": "mock",
            "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
            "usage": usage,
        }
        return b"application/json", json.dumps(body).encode()
    out = [_chunk(cid, {"role": "assistant", "content": ""})]
    if calls:
        c = calls[0]
        start = {"index": 0, "id": c["id"], "type": "function", "function": {"name": "noop", "arguments": ""}}
        out.append(_chunk(cid, {"tool_calls": [start]}))
        out.append(
            _chunk(cid, {"tool_calls": [{"index": 0, "function": {"arguments": c["function"]["arguments"]}}]})
        )
    else:
        out.append(_chunk(cid, {"content": content}))
    out.append(_chunk(cid, {}, finish))
    tail = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock",
        "choices": [],
        "usage": usage,
    }
    out.append(b"data: " + json.dumps(tail).encode() + b"\n\ndata: [DONE]\n\n")
    return b"text/event-stream", b"".join(out)


def model(steps: int) -> Handler:
    """The loopback server's handler: each request answered by :func:`response`."""

    async def handle(req: Received, w: asyncio.StreamWriter) -> None:
        ctype, payload = response(json.loads(req.body or b"{}"), steps)
        await write_response(w, 200, payload, content_type=ctype.decode(), close=False)

    return handle


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    server = LoopbackServer(
        model(args.steps),
        record=False,
        keep_alive=True,
        max_body=MAX_BODY,
        max_connections=MAX_CONNECTIONS,
        backlog=MAX_CONNECTIONS,
        port=args.port,
    )
    with server:
        print(server.port, flush=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            sys.exit(0)


if __name__ == "__main__":
    main()
