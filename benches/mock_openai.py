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
from typing import Any

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


async def handle(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, steps: int, sem: asyncio.Semaphore
) -> None:
    async with sem:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {
                    k.strip().lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)
                }
                length = int(headers.get("content-length", "0"))
                if length > MAX_BODY:
                    writer.write(
                        b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                    break
                body = await reader.readexactly(length) if length else b"{}"
                ctype, payload = response(json.loads(body or b"{}"), steps)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n%s"
                    % (ctype, len(payload), payload)
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()


async def serve(steps: int, port: int = 0) -> None:
    sem = asyncio.Semaphore(MAX_CONNECTIONS)
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, steps, sem), "127.0.0.1", port, limit=MAX_BODY, backlog=MAX_CONNECTIONS
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    try:
        asyncio.run(serve(args.steps, args.port))
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
