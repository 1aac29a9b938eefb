"""Anthropic's Messages API (reads ``ANTHROPIC_API_KEY``), streamed, with automatic prompt caching.

The HTTP side — pooled client, retries with ``retry-after``, replays of a stream cut before any
output, ``StreamInterrupted`` after, the stall watchdog, line and noise bounds, key scrubbing —
is :class:`~foldlog.providers.http.openai_compat.OpenAICompatible`'s; this class gives it the Messages
API's URL, headers, body (:mod:`foldlog.providers.anthropic.body`) and stream format
(:mod:`foldlog.providers.anthropic.stream`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foldlog import _core
from foldlog.errors import AuthError, ConfigError
from foldlog.providers.anthropic.body import (
    place_breakpoints,
    split_messages,
    thinking_param,
    tools_for_messages,
)
from foldlog.providers.anthropic.stream import MessagesStreamAssembler
from foldlog.providers.base import Chunk, Request
from foldlog.providers.http.openai_compat import OpenAICompatible, _Cut

if TYPE_CHECKING:
    from foldlog.log.wire import ChunkedBody
    from foldlog.providers.http.assemble import StreamAssembler
    from foldlog.providers.http.sse import SSEEvent

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MODEL = "claude-sonnet-4-5"
DEFAULT_MAX_TOKENS = 4096
#: what the Messages API takes after the core's block mapping: text, images (``image_url`` →
#: ``image``) and PDFs (``file`` → ``document``)
MESSAGES_CONTENT: frozenset[str] = frozenset({"text", "image_url", "file", "image", "document"})
#: every current Claude model has a 200k-token window (1M with a beta header, not sent here)
CONTEXT_WINDOW = 200_000
_TTLS = frozenset({"5m", "1h"})


class Anthropic(OpenAICompatible):
    """``Anthropic()`` reads ``ANTHROPIC_API_KEY``; streams ``{base_url}/v1/messages``.

    ``thinking``: extended thinking — ``None`` off, ``True`` (half of ``max_tokens`` as budget),
    a token budget, or the API's ``thinking`` object as it is. Signed thinking blocks (and
    redacted ones) are kept in the log and sent back verbatim while thinking is on.

    ``cache``: automatic prompt caching (``cache_control`` breakpoints on the tools, the system
    prompt and the last two user turns, docs/providers.md); ``cache=False`` sends none.
    ``cache_ttl``: ``"5m"`` (the API's default) or ``"1h"``.
    Other keyword arguments are :class:`OpenAICompatible`'s (retries, timeouts, bounds…).
    """

    content_types = MESSAGES_CONTENT

    def __init__(
        self,
        api_key: str | None = None,
        model: str = DEFAULT_MODEL,
        base_url: str = ANTHROPIC_BASE_URL,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        thinking: bool | int | Mapping[str, Any] | None = None,
        cache: bool = True,
        cache_ttl: str | None = None,
        version: str = ANTHROPIC_VERSION,
        context_window: int | None = None,
        **kwargs: Any,
    ) -> None:
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise AuthError("Anthropic needs an API key: pass api_key= or set ANTHROPIC_API_KEY")
        if cache_ttl is not None and cache_ttl not in _TTLS:
            raise ConfigError(f"cache_ttl must be one of {sorted(_TTLS)} or None, got {cache_ttl!r}")
        if not isinstance(cache, bool):
            raise ConfigError(f"cache must be True or False, got {cache!r}")
        super().__init__(
            base_url,
            key,
            model,
            max_tokens=max_tokens,
            context_window=context_window or CONTEXT_WINDOW,
            **kwargs,
        )
        self.thinking = thinking_param(thinking, max_tokens)  # checked here, once
        self.cache = cache
        self.cache_ttl = cache_ttl
        self.version = version

    # --- identity --------------------------------------------------------------------------

    @property
    def url(self) -> str:
        # base_url given with or without the version path
        base = self.base_url
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"

    def auth_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    # --- the request body ------------------------------------------------------------------

    def wire_style(self) -> str | None:
        # not a per-message image of the chat messages: built here, encoded by the core
        return None

    def cache_marker(self) -> dict[str, Any]:
        marker: dict[str, Any] = {"type": "ephemeral"}
        if self.cache_ttl is not None:
            marker["ttl"] = self.cache_ttl
        return marker

    def build_body(self, request: Request) -> dict[str, Any]:
        """The Messages API body for ``request`` (its messages mapped by
        :func:`~foldlog.providers.anthropic.body.split_messages`, breakpoints placed unless
        ``cache=False``)."""
        params = {k: v for k, v in request.params.items() if v is not None}
        thinking = params.pop("thinking", self.thinking)
        system, messages = split_messages(request.messages, thinking=thinking is not None)
        tools = tools_for_messages(request.tools) if request.tools else []
        if self.cache:
            place_breakpoints(tools, system, messages, self.cache_marker())
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens or self.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": messages,
            "stream": True,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        if thinking is not None:
            body["thinking"] = thinking
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(self.extra_body)
        body.update(params)
        return body

    def encode_request(self, request: Request) -> bytes | ChunkedBody:
        return _core.encode_json(self.build_body(dataclasses.replace(request, wire=None)))

    # --- the stream ------------------------------------------------------------------------

    def new_assembler(self) -> StreamAssembler:
        return MessagesStreamAssembler()

    def _event(self, event: SSEEvent, asm: StreamAssembler) -> list[Chunk] | None:
        chunks = super()._event(event, asm)
        if isinstance(asm, MessagesStreamAssembler) and asm.error is not None:
            # an error event (overloaded_error mid-stream): like a cut, replayed before any
            # output, StreamInterrupted after
            err = asm.error
            kind = err.get("type") or "error"
            message = self.redact(str(err.get("message") or ""))[:300]
            raise _Cut(f"the stream sent an error event ({kind}: {message})")
        return chunks

    def json_chunks(self, obj: dict[str, Any], asm: StreamAssembler) -> list[Chunk]:
        """A server that answered with the whole message object (``stream`` ignored)."""
        if not isinstance(asm, MessagesStreamAssembler):
            return super().json_chunks(obj, asm)
        if obj.get("type") == "error":
            asm.feed(obj)
            err = asm.error or {}
            raise _Cut(f"the response is an error ({err.get('type') or 'error'}: {err.get('message')})")
        return asm.feed_message(obj) + asm.finish()


__all__ = ["ANTHROPIC_BASE_URL", "ANTHROPIC_VERSION", "MESSAGES_CONTENT", "Anthropic"]
