"""A connection pool for HTTP/1.1 under httpx whose work per request does not grow with its size.

httpx's own pool (httpcore's ``AsyncConnectionPool``) scans every connection on each request and
on each response's close, and checks each idle one's socket with a syscall; at 1,000 concurrent
sessions that scan was most of the event loop's time (B7). Here the idle connections of an origin
wait in a stack: a request takes the most recently used one (its socket is checked once), a
closed response puts it back, and a semaphore bounds the connections in use. The HTTP itself stays
httpx's and httpcore's (requests, responses, h11, timeouts, the exception types); only the
scheduling is this module's.

Used by :class:`~foldlog.providers.http.openai_compat.OpenAICompatible` for HTTP/1.1 without a proxy
(see :func:`lean_pool_applies`); HTTP/2 multiplexes requests over a few connections, where the scan
costs little, and a proxy from the environment is httpx's to honour.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
import urllib.request
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterator
from contextlib import contextmanager

import httpcore
import httpx

from foldlog.providers.http.network import AsyncioBackend

#: httpx's default: an idle connection older than this is closed rather than reused
KEEPALIVE_EXPIRY = 5.0

_Origin = tuple[bytes, bytes, int]


def lean_pool_applies(url: str, *, http2: bool) -> bool:
    """Whether requests to ``url`` go through :class:`LeanTransport`: HTTP/1.1 (no HTTP/2 asked
    for an https URL) and no proxy in the environment."""
    if http2 and url.startswith("https://"):
        return False
    return not urllib.request.getproxies()


class LeanTransport(httpx.AsyncBaseTransport):
    """An httpx transport keeping up to ``max_connections`` HTTP/1.1 connections in use at once,
    idle ones reused most-recent-first; a request that finds every connection in use waits for
    one (at most the request's ``pool`` timeout, then :class:`httpx.PoolTimeout`)."""

    def __init__(
        self, *, max_connections: int, ssl_context: ssl.SSLContext, keepalive_expiry: float = KEEPALIVE_EXPIRY
    ) -> None:
        self._slots = asyncio.Semaphore(max_connections)
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._backend = AsyncioBackend()
        # per origin: (connection, when it went idle), the most recent on the right
        self._idle: dict[_Origin, deque[tuple[httpcore.AsyncHTTP11Connection, float]]] = {}
        self._closed = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        origin = (url.raw_scheme, url.raw_host, url.port or (443 if url.raw_scheme == b"https" else 80))
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        await self._acquire(request)
        try:
            with _mapped():
                conn = await self._take(origin, request.extensions.get("timeout", {}).get("connect"))
                response = await conn.handle_async_request(core_request)
        except BaseException:
            self._slots.release()
            raise
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseBody(self, origin, conn, response.stream),
            extensions=response.extensions,
        )

    async def _acquire(self, request: httpx.Request) -> None:
        if not self._slots.locked():
            await self._slots.acquire()
            return
        timeout = request.extensions.get("timeout", {}).get("pool")
        try:
            async with asyncio.timeout(timeout):
                await self._slots.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout("every connection of the pool stayed in use (pool timeout)") from None

    async def _take(self, origin: _Origin, timeout: float | None) -> httpcore.AsyncHTTP11Connection:
        """The most recently used idle connection to ``origin`` still open, else a new one
        (connecting within ``timeout``)."""
        idle = self._idle.get(origin)
        while idle:
            conn, _ = idle.pop()
            if conn.is_idle() and not conn.has_expired():
                return conn
            await conn.aclose()
        # HTTP/1.1 straight on the socket: httpcore's AsyncHTTPConnection around it only connects
        # on the first request, yet takes a lock (an event-loop round trip) on every one
        scheme, host, port = origin
        stream = await self._backend.connect_tcp(host.decode("ascii"), port, timeout=timeout)
        if scheme == b"https":
            self._ssl_context.set_alpn_protocols(["http/1.1"])  # as httpcore's connection does
            try:
                stream = await stream.start_tls(self._ssl_context, host.decode("ascii"), timeout)
            except BaseException:
                await stream.aclose()
                raise
        return httpcore.AsyncHTTP11Connection(
            httpcore.Origin(scheme, host, port), stream, keepalive_expiry=self._keepalive_expiry
        )

    async def _release(self, origin: _Origin, conn: httpcore.AsyncHTTP11Connection) -> None:
        """A response was closed: its connection waits for the next request, unless it closed."""
        self._slots.release()
        now = time.monotonic()
        idle = self._idle.setdefault(origin, deque())
        if conn.is_idle() and not self._closed:
            idle.append((conn, now))
        else:
            await conn.aclose()
        # the oldest idle connections past their expiry are closed here (a few per release at most)
        while idle and now - idle[0][1] > self._keepalive_expiry:
            old, _ = idle.popleft()
            await old.aclose()

    async def aclose(self) -> None:
        self._closed = True
        idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn, _ in conns:
                await conn.aclose()


class LeanPost:
    """POSTs to ``url`` through ``client``: through ``transport`` (the client's `LeanTransport`;
    ``None``: another transport) with the request httpx's client would build — its headers, then
    the body's ``Content-Length`` — made from parts built once (the headers, the URL, the
    timeouts), skipping `httpx.AsyncClient.send`'s layers that do nothing here: the auth flow
    (a key is a header), the redirect loop (redirects are not followed) and the event hooks
    (none). Building the request, those layers and the cookie jar's reading of every response
    were a seventh of B7's event loop. Cookies stay the client's: a client holding some, or a URL
    with credentials, sends through ``client.send``; a response setting one fills the jar."""

    def __init__(self, client: httpx.AsyncClient, transport: LeanTransport | None, url: str) -> None:
        self.client = client
        self._url = httpx.URL(url)
        self._transport = None if self._url.userinfo else transport
        self._head = [(b"Host", self._url.netloc), *client.headers.raw]
        self._extensions = {"timeout": client.timeout.as_dict()}

    async def send(self, body: bytes | AsyncIterable[bytes], length: int) -> httpx.Response:
        """The response to a POST of ``body`` (``length`` bytes), its body not read yet."""
        client, transport = self.client, self._transport
        if transport is None or client.cookies:
            # a streamed body states its length: no chunked transfer encoding, which some servers refuse
            headers = None if isinstance(body, bytes) else {"Content-Length": str(length)}
            request = client.build_request("POST", self._url, content=body, headers=headers)
            return await client.send(request, stream=True)
        request = httpx.Request(
            "POST",
            self._url,
            headers=[*self._head, (b"Content-Length", b"%d" % length)],
            stream=_RequestBody(body),
            extensions=self._extensions,
        )
        response = await transport.handle_async_request(request)
        response.request = request
        if "set-cookie" in response.headers:
            client.cookies.extract_cookies(response)
        if _httpx_log.isEnabledFor(logging.INFO):  # the line httpx's client logs
            _httpx_log.info('HTTP Request: POST %s "%s %d %s"', self._url, response.http_version,
                            response.status_code, response.reason_phrase)  # fmt: skip
        return response


class _RequestBody(httpx.AsyncByteStream):
    """A request's body: bytes, or the parts of a body written as it is sent."""

    __slots__ = ("_body",)

    def __init__(self, body: bytes | AsyncIterable[bytes]) -> None:
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        body = self._body
        if isinstance(body, bytes):
            yield body
            return
        async for part in body:
            yield part


_httpx_log = logging.getLogger("httpx")


class _ResponseBody(httpx.AsyncByteStream):
    """A response's body; closing it hands its connection back to the pool (once)."""

    __slots__ = ("_conn", "_origin", "_pool", "_stream")

    def __init__(
        self, pool: LeanTransport, origin: _Origin, conn: httpcore.AsyncHTTP11Connection, stream: object
    ) -> None:
        self._pool: LeanTransport | None = pool
        self._origin = origin
        self._conn = conn
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _mapped():
            async for part in self._stream:  # type: ignore[attr-defined]
                yield part

    async def aclose(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            with _mapped():
                await self._stream.aclose()  # type: ignore[attr-defined]
        finally:
            await pool._release(self._origin, self._conn)


# httpcore's exceptions and httpx's share their names; each is raised as httpx's (what callers catch)
_MAPPED: tuple[tuple[type[Exception], type[Exception]], ...] = tuple(
    (getattr(httpcore, name), getattr(httpx, name))
    for name in (
        "ConnectTimeout",
        "ReadTimeout",
        "WriteTimeout",
        "PoolTimeout",
        "ConnectError",
        "ReadError",
        "WriteError",
        "LocalProtocolError",
        "RemoteProtocolError",
        "UnsupportedProtocol",
        "ProxyError",
        "NetworkError",
        "TimeoutException",
        "ProtocolError",
    )
)


@contextmanager
def _mapped() -> Iterator[None]:
    try:
        yield
    except httpcore.ConnectionNotAvailable:
        raise
    except Exception as exc:
        for core, ours in _MAPPED:  # the most specific first
            if isinstance(exc, core):
                raise ours(str(exc)) from exc
        raise
