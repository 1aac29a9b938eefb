"""A scripted provider for tests and examples: replays canned replies through the streaming path."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, cast

from foldlog.errors import ProviderError
from foldlog.log.grammar.types import FinishReason, ToolCall, Usage
from foldlog.providers.base import (
    Chunk,
    ProviderBase,
    ReasoningDelta,
    Request,
    TextDelta,
    ToolCallStart,
    stream_end,
)

Reply = Mapping[str, Any] | BaseException | Callable[[Request], Any]
_FINISH = ("stop", "tool_calls", "length", "content_filter", "cut")


def _pieces(text: str) -> Iterable[str]:
    """Split into 1, 2, 3, 1, 2, 3 … character deltas, like a real stream."""
    i, n, size = 0, len(text), 1
    while i < n:
        yield text[i : i + size]
        i += size
        size = size % 3 + 1


def usage_from(d: Mapping[str, Any] | None) -> Usage | None:
    if d is None:
        return None
    prompt = int(d.get("prompt_tokens", 0))
    hit = int(d.get("cache_hit_tokens", d.get("prompt_cache_hit_tokens", 0)))
    miss = d.get("cache_miss_tokens", d.get("prompt_cache_miss_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=int(d.get("completion_tokens", 0)),
        cache_hit_tokens=hit,
        cache_miss_tokens=int(miss) if miss is not None else max(prompt - hit, 0),
        reasoning_tokens=int(d.get("reasoning_tokens", 0)),
    )


class Scripted(ProviderBase):
    """Replies, one per provider call: an assistant message dict, an exception, or a (sync or async)
    callable taking the :class:`Request` and returning either.

    A reply dict has ``content``, optional ``reasoning_content``, ``tool_calls`` as
    ``[{"id", "name", "arguments"}]`` (arguments a JSON string or a dict), ``usage`` (``prompt_tokens``,
    ``completion_tokens``, ``cache_hit_tokens``…), optional ``finish_reason``; for tests also
    ``raise_after`` (an exception raised after streaming the text), ``delay`` (seconds before each
    chunk) and ``hang`` (stall forever after the text, until cancelled).
    """

    def __init__(
        self,
        replies: Iterable[Reply] = (),
        *,
        model: str = "scripted",
        context_window: int | None = None,
        keep_requests: bool = True,
    ) -> None:
        self._replies = list(replies)
        self._next = 0
        self.model = model
        self._context_window = context_window
        self.keep_requests = keep_requests
        self.requests: list[Request] = []
        self.calls = 0

    @property
    def context_window(self) -> int | None:
        return self._context_window

    def add(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._next

    async def aclose(self) -> None:
        return None

    def stream(self, request: Request) -> AsyncIterator[Chunk]:
        return self._stream(request)

    async def _stream(self, request: Request) -> AsyncIterator[Chunk]:
        self.calls += 1
        if self.keep_requests:
            self.requests.append(request)
        if self._next >= len(self._replies):
            raise ProviderError(
                f"Scripted provider ran out of replies: request {self.calls} but only "
                f"{len(self._replies)} replies were scripted"
            )
        reply: Any = self._replies[self._next]
        self._next += 1
        if callable(reply) and not isinstance(reply, BaseException):
            reply = reply(request)
            if inspect.isawaitable(reply):
                reply = await reply
        if isinstance(reply, BaseException):
            raise reply
        if not isinstance(reply, Mapping):
            raise ProviderError(f"Scripted reply {self._next} must be a dict or an exception, got {reply!r}")
        delay = float(reply.get("delay", 0.0))
        async for chunk in self._chunks(reply, delay):
            yield chunk

    async def _chunks(self, reply: Mapping[str, Any], delay: float) -> AsyncIterator[Chunk]:
        async def tick() -> None:
            if delay:
                await asyncio.sleep(delay)

        for piece in _pieces(reply.get("reasoning_content") or ""):
            await tick()
            yield ReasoningDelta(piece)
        for piece in _pieces(reply.get("content") or ""):
            await tick()
            yield TextDelta(piece)
        if reply.get("hang"):
            await asyncio.Event().wait()
        if reply.get("raise_after") is not None:
            raise reply["raise_after"]
        calls = [self._call(i, c) for i, c in enumerate(reply.get("tool_calls") or ())]
        for i, call in enumerate(calls):
            await tick()
            yield ToolCallStart(i, call.id, call.name)
        finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
        if finish not in _FINISH:
            raise ProviderError(f"Scripted finish_reason must be one of {_FINISH}, got {finish!r}")
        for chunk in stream_end(calls, usage_from(reply.get("usage")), cast(FinishReason, finish)):
            yield chunk

    @staticmethod
    def _call(i: int, c: Mapping[str, Any]) -> ToolCall:
        args = c.get("arguments", "")
        if not isinstance(args, str):
            import json

            args = json.dumps(args)
        return ToolCall(str(c.get("id") or f"call_{i}"), str(c["name"]), args)
