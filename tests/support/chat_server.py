"""The OpenAI chat-completions wire, for the loopback server: stream chunks, SSE lines, and a
server answering a script of replies (the CLI and end-to-end tests' model)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from tests.support.http_server import LoopbackServer, Received, write_response


def chunk_obj(
    delta: dict[str, Any] | None = None, finish: str | None = None, usage: Any = None
) -> dict[str, Any]:
    """One ``chat.completion.chunk`` (``delta=None``: a chunk without choices, e.g. the usage one)."""
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "x", "object": "chat.completion.chunk", "choices": choices, "usage": usage}


def sse_lines(objs: Sequence[Any], *, done: bool = True) -> bytes:
    """``data:`` events of ``objs`` as JSON, and the ``[DONE]`` line."""
    out = b"".join(b"data: " + json.dumps(o).encode() + b"\n\n" for o in objs)
    return out + (b"data: [DONE]\n\n" if done else b"")


DEFAULT_USAGE = {
    "prompt_tokens": 100,
    "completion_tokens": 10,
    "total_tokens": 110,
    "prompt_cache_hit_tokens": 60,
    "prompt_cache_miss_tokens": 40,
}


def reply_chunks(reply: dict[str, Any], model: str) -> list[dict[str, Any]]:
    """The stream of one scripted reply (see :class:`ChatServer`): the text 7 characters a chunk,
    each call's name then its arguments, and a last chunk with the finish reason and the usage."""

    def chunk(delta: dict[str, Any], finish: str | None = None, usage: Any = None) -> dict[str, Any]:
        c: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        if usage is not None:
            c["usage"] = usage
        return c

    out = [chunk({"role": "assistant", "content": ""})]
    text = reply.get("content", "")
    for i in range(0, len(text), 7):
        out.append(chunk({"content": text[i : i + 7]}))
    calls = reply.get("tool_calls", [])
    for index, (call_id, name, args) in enumerate(calls):
        start = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        out.append(chunk({"tool_calls": [start]}))
        out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]}))
    out.append(chunk({}, "tool_calls" if calls else "stop", reply.get("usage", DEFAULT_USAGE)))
    return out


class ChatServer(LoopbackServer):
    """Serves ``/v1/chat/completions`` from a list of replies, the last one repeating.

    A reply is ``{"content": str, "tool_calls": [(id, name, arguments)], "usage": {...}}`` or
    ``{"status": 401, "body": str}`` (``body`` may be a function of the request, to quote what it
    carried). ``"delay": s`` waits before answering; ``"stall": s`` waits after the text, before
    the end of the stream, and sets ``stalled`` (the test may then stop the client mid-stream).
    """

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        super().__init__(self._answer)
        self.replies = list(replies)
        self.stalled = False

    async def _answer(self, req: Received, w: asyncio.StreamWriter) -> None:
        body = req.json()
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if reply.get("delay"):  # a model that takes its time (to cancel it meanwhile)
            await asyncio.sleep(float(reply["delay"]))
        if "status" in reply:
            text: str | Callable[[Received], str] = reply.get("body", '{"error":{"message":"nope"}}')
            data = (text(req) if callable(text) else text).encode()
            await write_response(w, reply["status"], data)
            return
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        for chunk in reply_chunks(reply, body.get("model", "fake")):
            if reply.get("stall") and chunk["choices"][0]["finish_reason"]:
                await w.drain()
                self.stalled = True
                await asyncio.sleep(float(reply["stall"]))
            w.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        w.write(b"data: [DONE]\n\n")
        await w.drain()
