"""A provider for any OpenAI-compatible chat-completions endpoint, streamed over httpx.

DeepSeek, OpenAI, the llama.cpp server, vLLM and gateways all speak this dialect. The one
:class:`OpenAICompatible` class owns the HTTP side (a pooled ``httpx.AsyncClient``, retries,
replays, the stall watchdog); :mod:`foldlog.providers.http.assemble` owns the stream format.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
import re
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from foldlog import _core
from foldlog.errors import (
    APIError,
    AuthError,
    ConfigError,
    ProviderError,
    ProviderTimeout,
    StreamInterrupted,
    StreamProtocolError,
    UnexpectedResponseError,
)
from foldlog.providers.base import Chunk, ErrorChunk, ProviderBase, Request
from foldlog.providers.content import TEXT_AND_IMAGES, check_content
from foldlog.providers.http.assemble import ChatStreamAssembler, StreamAssembler
from foldlog.providers.http.replies import (
    drain_rest,
    h2_available,
    is_json,
    read_error_body,
    shared_ssl_context,
)
from foldlog.providers.http.retry import OnRetry, RetryPolicy, is_retryable_status
from foldlog.providers.http.sse import MAX_LINE_BYTES, MAX_NOISE_BYTES, SSEDecoder, SSEEvent

if TYPE_CHECKING:
    import httpx

    from foldlog.log.wire import ChunkedBody
    from foldlog.providers.http.pool import LeanPost

log = logging.getLogger("foldlog.providers")

#: the content types a completion may come in (a stream, or one JSON body)
STREAM_CONTENT_TYPES = ("text/event-stream", "application/json")
#: how much of an unexpected answer's body its error shows
HEAD_CHARS = 200
# Room for every concurrent session of a process to have its request in flight: requests beyond
# the pool wait in httpcore's queue, whose scheduling grows with its length (at 64 connections,
# 1,000 concurrent sessions spent 62% of their time there). The OpenAI SDK's client allows 1,000.
MAX_CONNECTIONS = 1000
MAX_KEEPALIVE = 100
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',]+")


class _Cut(Exception):
    """The response body ended or stalled before the reply was complete."""

    def __init__(self, reason: str, *, stalled: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.stalled = stalled


class OpenAICompatible(ProviderBase):
    """Streams chat completions from ``{base_url}/chat/completions``.

    ``content_types``: the content block types the endpoint's model takes (default: ``text``
    and ``image_url``; add ``input_audio`` / ``file`` for a model that takes them). A request
    holding another type fails with :class:`~foldlog.errors.UnsupportedContentError` before
    anything is sent.

    ``timeout`` bounds connecting and sending; ``stall_timeout`` is the watchdog: no bytes for
    that long (waiting for headers or inside the body) counts as a cut connection;
    ``idle_timeout``: no output (only keep-alives, blank lines or empty chunks) for that long
    counts as a stall too. ``max_line_bytes`` bounds one SSE line, one event and a non-streamed
    JSON body; ``max_noise_bytes`` bounds keep-alives and blank lines in a row without an event.
    ``max_connections`` sizes the connection pool (requests in flight at once; a given
    ``transport`` brings its own pool).
    Passing either bound raises :class:`StreamProtocolError` at once, without retrying.

    ``structured_output``: the endpoint takes ``response_format`` ``{"type": "json_schema"}``
    (OpenAI, llama.cpp's server, vLLM): a typed run (``Agent.run(output_type=…)``) then sends its
    schema there instead of offering a final-answer tool (docs/output.md). Off by default: many
    compatible endpoints ignore or reject it.
    """

    #: block types the endpoint takes (a subclass declares its model's; ``None``: anything)
    content_types: frozenset[str] | None = TEXT_AND_IMAGES
    #: counted: every request sent to the endpoint, retries and replays included
    requests_sent: int

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        model: str | None = None,
        *,
        content_types: Iterable[str] | None = None,
        timeout: float = 30.0,
        stall_timeout: float = 120.0,
        max_retries: int = 10,
        retry: RetryPolicy | None = None,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        context_window: int | None = None,
        on_retry: OnRetry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        idle_timeout: float | None = 900.0,
        max_line_bytes: int | None = MAX_LINE_BYTES,
        max_noise_bytes: int | None = MAX_NOISE_BYTES,
        max_connections: int = MAX_CONNECTIONS,
        structured_output: bool | None = None,
    ) -> None:
        if structured_output is not None:
            self.structured_output = bool(structured_output)
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL, got {base_url!r}")
        if not model:
            raise ConfigError("model is required (the name the endpoint knows the model by)")
        if timeout <= 0 or stall_timeout <= 0:
            raise ConfigError("timeout and stall_timeout must be positive (seconds)")
        if max_tokens is not None and max_tokens <= 0:
            raise ConfigError(f"max_tokens must be positive, got {max_tokens}")
        if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
            raise ConfigError(f"max_connections must be a positive int, got {max_connections!r}")
        if idle_timeout is not None and idle_timeout <= 0:
            raise ConfigError(f"idle_timeout must be positive (seconds) or None, got {idle_timeout}")
        if content_types is not None:
            if isinstance(content_types, str) or not all(isinstance(t, str) for t in content_types):
                raise ConfigError(f"content_types must be block type names, got {content_types!r}")
            self.content_types = frozenset(content_types) | {"text"}
        # the decoder checks its bounds; one made here fails on bad ones at construction
        SSEDecoder(max_line_bytes=max_line_bytes, max_noise_bytes=max_noise_bytes)
        self.idle_timeout = None if idle_timeout is None else float(idle_timeout)
        self.max_line_bytes = max_line_bytes
        self.max_noise_bytes = max_noise_bytes
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = float(timeout)
        self.stall_timeout = float(stall_timeout)
        self.retry = retry if retry is not None else RetryPolicy(max_retries=max_retries)
        self.max_tokens = max_tokens
        self.extra_body: dict[str, Any] = dict(extra_body or {})
        self.on_retry = on_retry
        self._context_window = context_window
        self._api_key = api_key or None
        self._headers = dict(headers or {})
        self._transport = transport
        self.max_connections = max_connections
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        # responses past their [DONE] whose rest is read in the background (see replies.drain_rest)
        self._draining: dict[httpx.Response, asyncio.Task[None]] = {}
        # every request sent to the endpoint, retries and replays included (the CLI's usage line)
        self.requests_sent = 0

    # --- identity (never shows the key or the headers) -------------------------------------

    def __repr__(self) -> str:
        key = "set" if self._api_key else "none"
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r}, api_key={key})"

    @property
    def context_window(self) -> int | None:
        return self._context_window

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def redact(self, text: str) -> str:
        """Remove the API key and any bearer token from text bound for an error message."""
        secrets = [self._api_key] if self._api_key else []
        for name, value in self._headers.items():
            if name.lower() in ("authorization", "api-key", "x-api-key") and value.strip():
                secrets.append(value.split()[-1])  # the token, without a "Bearer" scheme
        for secret in secrets:
            if secret and len(secret) >= 4:
                text = text.replace(secret, "***")
        return _BEARER.sub(r"\1***", text)

    # --- the request body ------------------------------------------------------------------

    def build_body(self, request: Request) -> dict[str, Any]:
        """The request body as a mapping, its messages as this endpoint takes them (the core's
        `wire_style` mapping, e.g. without ``reasoning_content``)."""
        style = self.wire_style() or "strip"
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": _core.styled_messages(list(request.messages), style) if request.messages else [],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            body["tools"] = normalize_tools(request.tools)
            # the API default, but llama.cpp's chatml-function-calling ignores tools without it
            body["tool_choice"] = "auto"
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if request.temperature is not None:
            body["temperature"] = request.temperature
        body.update(self.extra_body)
        body.update({k: v for k, v in request.params.items() if v is not None})
        return body

    def encode_body(self, body: Mapping[str, Any]) -> bytes:
        """``body`` as bytes, by the core (the only encoder of request bodies): sorted keys and
        fixed separators, so the same request prefix gives the same bytes, which is what prefix
        caches (DeepSeek, OpenAI) key on."""
        return _core.encode_json(body)

    def wire_style(self) -> str | None:
        """How the session core writes this endpoint's messages: ``"strip"`` (without
        ``reasoning_content``). A subclass that sends messages the core does not write (another
        shape, another template) returns ``None``: its `build_body` then makes them."""
        return "strip"

    def encode_request(self, request: Request) -> bytes | ChunkedBody:
        """The request body, written by the core: its cached message segments framed by this
        provider's fields when ``request.wire`` fits (O(new messages)), else the messages written
        now in the same style. A provider without a style (``wire_style() is None``) sends the
        messages its `build_body` makes."""
        style = self.wire_style()
        if style is None:
            return self.encode_body(self.build_body(request))
        frame = self.build_body(dataclasses.replace(request, messages=(), wire=None))
        wire = request.wire
        if wire is not None and wire.style == style and wire.messages is request.messages:
            from foldlog.log.wire import chunked_body

            return chunked_body(wire, frame)
        return _core.encode_request(frame, list(request.messages), style)

    # --- streaming -------------------------------------------------------------------------

    async def stream(self, request: Request) -> AsyncIterator[Chunk]:
        check_content(request, self.content_types, f"{type(self).__name__}({self.model})")
        payload = self.encode_request(request)
        replays = 0
        while True:
            response = await self._send(payload)
            asm = self.new_assembler()
            forwarded = False
            try:
                async for chunks in self._read(response, asm):
                    for chunk in chunks:
                        forwarded = True
                        yield chunk
                return
            except _Cut as cut:
                if forwarded:
                    raise StreamInterrupted(
                        f"{cut.reason} after part of the reply was received ({self.url})",
                        partial_text=asm.text,
                    ) from None
                replays += 1
                if replays > self.retry.max_replays:
                    cls = ProviderTimeout if cut.stalled else ProviderError
                    raise cls(
                        f"{cut.reason} before any output, {replays} attempts ({self.url}); giving up"
                    ) from None
                delay = self.retry.backoff(replays)
                await self._notify(replays, delay, f"replay: {cut.reason}")
                await asyncio.sleep(delay)
            finally:
                if response not in self._draining:
                    await response.aclose()

    def new_assembler(self) -> StreamAssembler:
        """The reader of one response's events (a subclass speaking another stream format gives
        its own)."""
        return ChatStreamAssembler()

    async def _read(self, response: httpx.Response, asm: StreamAssembler) -> AsyncIterator[list[Chunk]]:
        import httpx

        if is_json(response):
            yield await self._read_json(response, asm)
            return
        decoder = SSEDecoder(max_line_bytes=self.max_line_bytes, max_noise_bytes=self.max_noise_bytes)
        pieces = response.aiter_bytes().__aiter__()
        loop = asyncio.get_running_loop()
        idle = self.idle_timeout
        # keep-alives reset the byte watchdog but not this one: only output does
        quiet_until = loop.time() + idle if idle is not None else None
        while True:
            wait = self.stall_timeout
            if quiet_until is not None:
                wait = min(wait, max(quiet_until - loop.time(), 0.0))
            try:
                async with asyncio.timeout(wait):
                    piece = await pieces.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                if wait < self.stall_timeout:
                    raise _Cut(
                        f"stalled: no output for {idle:g} s (idle_timeout), only keep-alives or blank lines",
                        stalled=True,
                    ) from None
                raise _Cut(f"stalled: no bytes for {self.stall_timeout:g} s", stalled=True) from None
            except httpx.TransportError as e:
                raise _Cut(f"connection cut ({type(e).__name__}: {self.redact(str(e))})") from None
            for event in decoder.feed(piece):
                chunks = self._event(event, asm)
                if chunks is None:  # [DONE]
                    if self._transport is None:  # the provider's own pool keeps connections alive
                        drain = self._drain_and_close(response, pieces)
                        self._draining[response] = asyncio.create_task(drain)
                    yield asm.finish()
                    return
                if chunks:
                    if idle is not None:
                        quiet_until = loop.time() + idle
                    yield chunks
                    if isinstance(chunks[-1], ErrorChunk):
                        return
        for event in decoder.close():
            try:
                chunks = self._event(event, asm)
            except _Cut:
                break  # a last line cut off mid-JSON: the connection was cut (or it is trailing noise)
            if chunks is None:
                yield asm.finish()
                return
            if chunks:
                yield chunks
                if isinstance(chunks[-1], ErrorChunk):
                    return
        if not asm.finished:
            raise _Cut("the stream ended without [DONE] or a finish reason (cut connection)")
        yield asm.finish()

    def _event(self, event: SSEEvent, asm: StreamAssembler) -> list[Chunk] | None:
        data = event.data.strip()
        if data == "[DONE]":
            return None
        if not data:
            return []
        try:
            obj = json.loads(data)
        except json.JSONDecodeError as e:
            # a damaged line cannot be trusted: handle it like a cut (replay, or the agent continues)
            raise _Cut(
                f"malformed JSON in a data line ({e.msg} at {e.pos}: {self.redact(data[:120])!r})"
            ) from None
        if not isinstance(obj, dict):
            raise _Cut(f"a data line is not a JSON object: {self.redact(data[:120])!r}")
        return asm.feed(obj, event.event)

    async def _read_json(self, response: httpx.Response, asm: StreamAssembler) -> list[Chunk]:
        """A server that ignored ``stream: true`` answered with one JSON completion."""
        import httpx

        raw = bytearray()
        limit = self.max_line_bytes
        idle = self.idle_timeout
        try:
            # the body is the output: blank lines before it (DeepSeek's keep-alive while a
            # request is queued) may take idle_timeout at most, like keep-alives in a stream
            async with asyncio.timeout(idle):
                async for piece in response.aiter_bytes():
                    raw += piece
                    if limit is not None and len(raw) > limit:
                        raise StreamProtocolError(
                            f"the JSON response body is longer than {limit} bytes (max_line_bytes); "
                            "it was abandoned before reading the rest"
                        )
        except TimeoutError:
            if idle is None:
                raise
            raise _Cut(f"stalled: no complete JSON body in {idle:g} s (idle_timeout)", stalled=True) from None
        except httpx.TimeoutException:
            raise _Cut(f"stalled: no bytes for {self.stall_timeout:g} s", stalled=True) from None
        except httpx.TransportError as e:
            raise _Cut(f"connection cut ({type(e).__name__}: {self.redact(str(e))})") from None
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            raise _Cut(f"malformed JSON body ({e.msg})") from None
        if not isinstance(obj, dict):
            raise _Cut("the JSON body is not an object")
        return self.json_chunks(obj, asm)

    def json_chunks(self, obj: dict[str, Any], asm: StreamAssembler) -> list[Chunk]:
        """The chunks of a whole (non-streamed) JSON response: its choices' messages fed as
        deltas."""
        if isinstance(obj.get("choices"), list):
            obj = dict(obj)
            obj["choices"] = [
                {**c, "delta": c.get("message") or {}} for c in obj["choices"] if isinstance(c, Mapping)
            ]
        chunks = asm.feed(obj)
        if chunks and isinstance(chunks[-1], ErrorChunk):
            return chunks
        return chunks + asm.finish()

    # --- connect / headers phase with retries ----------------------------------------------

    def _client_for_loop(self) -> LeanPost:
        import httpx

        from foldlog.providers.http.pool import LeanPost, LeanTransport, lean_pool_applies

        loop = asyncio.get_running_loop()
        # a client's pool belongs to the loop it first ran on; a new loop (run_sync called
        # twice) gets a new client
        if self._client is None or self._client_loop is not loop:
            headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
            headers.update(self.auth_headers())
            headers.update(self._headers)
            http2 = h2_available() and self._transport is None
            transport = self._transport
            if transport is None and lean_pool_applies(self.base_url, http2=http2):
                transport = LeanTransport(
                    max_connections=self.max_connections, ssl_context=shared_ssl_context()
                )
            self._client = httpx.AsyncClient(
                headers=headers,
                timeout=httpx.Timeout(self.timeout, read=self.stall_timeout),
                transport=transport,
                http2=http2,
                verify=shared_ssl_context(),
                limits=httpx.Limits(
                    max_connections=self.max_connections,
                    max_keepalive_connections=min(self.max_connections, MAX_KEEPALIVE),
                ),
            )
            self._client_loop = loop
            lean = transport if isinstance(transport, LeanTransport) else None
            self._post = LeanPost(self._client, lean, self.url)
        return self._post

    async def _send(self, payload: bytes | ChunkedBody) -> httpx.Response:
        import httpx

        post, length = self._client_for_loop(), len(payload)
        attempt = 0
        while True:
            retry_headers: Mapping[str, str] | None = None
            self.requests_sent += 1
            try:
                response = await post.send(payload, length)
            except httpx.TransportError as e:
                reason = f"network error ({type(e).__name__}: {self.redact(str(e)) or 'no detail'})"
            else:
                status = response.status_code
                if status < 400:
                    await self._check_stream(response)
                    return response
                body = await read_error_body(response)
                await response.aclose()
                body = self.redact(body)
                if status in (401, 403):
                    raise AuthError(
                        f"{self.url} refused the credentials (HTTP {status}): {body[:500]}"
                        + ("" if self._api_key else " — no API key was given")
                    )
                if not is_retryable_status(status):
                    raise APIError(f"HTTP {status} from {self.url}: {body}", status=status, body=body)
                reason = f"HTTP {status}"
                retry_headers = response.headers
                if attempt >= self.retry.max_retries:
                    raise APIError(
                        f"HTTP {status} from {self.url} after {attempt} retries: {body}",
                        status=status,
                        body=body,
                    )
            if attempt >= self.retry.max_retries:
                raise ProviderError(f"{reason} calling {self.url}; gave up after {attempt} retries")
            attempt += 1
            delay = self.retry.delay(attempt, retry_headers)
            await self._notify(attempt, delay, reason)
            await asyncio.sleep(delay)

    async def _check_stream(self, response: httpx.Response) -> None:
        """Refuse a success answer that is not the stream or JSON asked for — a captive portal's
        HTML page, a proxy's redirect — naming its status, content type and first bytes. Not
        retried: the same request would meet the same page. A body without a content type is
        read as a stream (servers that omit it exist; the stream's own checks then apply)."""
        content_type = response.headers.get("content-type")
        media = content_type.split(";")[0].strip().lower() if content_type is not None else None
        redirect = 300 <= response.status_code < 400
        if not redirect and media in (None, *STREAM_CONTENT_TYPES):
            return
        head = self.redact(await read_error_body(response))[:HEAD_CHARS]
        await response.aclose()
        where = f" to {response.headers['location']!r}" if redirect and "location" in response.headers else ""
        raise UnexpectedResponseError(
            f"{self.url} answered HTTP {response.status_code}{where} with content type "
            f"{content_type or 'none'!r}, not an event stream or JSON (a captive portal or a proxy's "
            f"page?); first bytes: {head!r}",
            content_type=content_type or "",
            head=head,
        )

    def auth_headers(self) -> dict[str, str]:
        """The headers carrying the key (a bearer token; a subclass whose API names it otherwise
        gives its own)."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def check_peer(self) -> None:
        """Called before each retry or replay: raise to stop retrying (a local server that died)."""

    async def _notify(self, attempt: int, delay: float, reason: str) -> None:
        self.check_peer()
        log.info("retry %d in %.2f s: %s", attempt, delay, reason)
        if self.on_retry is None:
            return
        try:
            result = self.on_retry(attempt, delay, reason)
            if inspect.isawaitable(result):
                await result
        except Exception:  # a UI callback must never break the request
            log.exception("on_retry callback failed")

    async def _drain_and_close(self, response: httpx.Response, pieces: AsyncIterator[bytes]) -> None:
        """Read the rest of a body after its ``[DONE]`` in the background (the reply is already
        the caller's), then close it: read to its end, its connection goes back to the pool."""
        try:
            await drain_rest(pieces)
        finally:
            self._draining.pop(response, None)
            await response.aclose()

    async def aclose(self) -> None:
        draining = list(self._draining.values())
        for task in draining:
            task.cancel()
        await asyncio.gather(*draining, return_exceptions=True)
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.aclose()

    async def __aenter__(self) -> OpenAICompatible:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def normalize_tools(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Tools in ``{type: function, function: {...}}`` shape, sorted by name (a stable prefix)."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        fn: dict[str, Any]
        if tool.get("type") == "function" and isinstance(tool.get("function"), Mapping):
            fn = dict(tool["function"])
        elif "name" in tool:
            fn = dict(tool)
        else:
            raise ConfigError(f"a tool needs a name (or a 'function' with one): {dict(tool)!r}")
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise ConfigError(f"a tool name must be a non-empty string: {fn!r}")
        out.append({"type": "function", "function": fn})
    out.sort(key=lambda t: str(t["function"]["name"]))
    return out
