"""httpcore's network layer on plain asyncio: a socket's bytes through one ``asyncio.Protocol``.

httpcore's default backend goes through anyio, which opens a cancel scope (and looks the current
task and async library up) around every read and write; at B7's load that was a sixth of the event
loop. Here a read that finds bytes waiting returns them at once, and one that must wait does so on
a future with an ``asyncio.timeout``. Used by :class:`~foldlog.providers.http.pool.LeanTransport`.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore

#: bytes read ahead from a socket before its reading pauses (the HTTP layer reads 64 KiB at a time)
READ_AHEAD = 256 * 1024


class _Socket(asyncio.Protocol):
    """What arrived on one connection, and whether the other side may be written to."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: Exception | None = None
        self.paused = False
        self._readable: asyncio.Future[None] | None = None
        self._writable: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > READ_AHEAD and self.transport is not None:
            self.transport.pause_reading()
        self._wake_reader()

    def eof_received(self) -> bool:
        self.eof = True
        self._wake_reader()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.eof = True
        self.error = exc
        self._wake_reader()
        self.resume_writing()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        waiter, self._writable = self._writable, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _wake_reader(self) -> None:
        waiter, self._readable = self._readable, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def wait_readable(self) -> None:
        self._readable = asyncio.get_running_loop().create_future()
        await self._readable

    async def wait_writable(self) -> None:
        self._writable = asyncio.get_running_loop().create_future()
        await self._writable


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One TCP (or TLS) connection, as httpcore's HTTP/1.1 connection reads and writes it."""

    def __init__(self, sock: _Socket) -> None:
        self._sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        sock = self._sock
        if not sock.buffer and not sock.eof:
            try:
                async with asyncio.timeout(timeout):
                    while not sock.buffer and not sock.eof:
                        await sock.wait_readable()
            except TimeoutError:
                raise httpcore.ReadTimeout(f"no bytes for {timeout} s") from None
        if sock.buffer:
            data = bytes(sock.buffer[:max_bytes])
            del sock.buffer[:max_bytes]
            if sock.transport is not None and len(sock.buffer) <= READ_AHEAD:
                sock.transport.resume_reading()
            return data
        if sock.error is not None:
            raise httpcore.ReadError(str(sock.error) or type(sock.error).__name__)
        return b""  # the other side ended the connection

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        sock = self._sock
        if not buffer:
            return
        if sock.transport is None or sock.transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        sock.transport.write(buffer)
        if sock.paused:
            try:
                async with asyncio.timeout(timeout):
                    while sock.paused and not sock.eof:
                        await sock.wait_writable()
            except TimeoutError:
                raise httpcore.WriteTimeout(f"the other side took no bytes for {timeout} s") from None
            if sock.eof and sock.error is not None:
                raise httpcore.WriteError(str(sock.error))

    async def aclose(self) -> None:
        if self._sock.transport is not None:
            self._sock.transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        sock = self._sock
        assert sock.transport is not None
        loop = asyncio.get_running_loop()
        try:
            transport = await loop.start_tls(
                sock.transport,
                sock,
                ssl_context,
                server_hostname=server_hostname,
                ssl_handshake_timeout=timeout,
            )
        except TimeoutError:
            sock.transport.close()
            raise httpcore.ConnectTimeout(f"no TLS handshake in {timeout} s") from None
        except (OSError, ssl.SSLError) as e:
            sock.transport.close()
            raise httpcore.ConnectError(str(e)) from None
        if transport is None:
            raise httpcore.ConnectError("the TLS handshake did not complete")
        sock.transport = transport
        return self

    def get_extra_info(self, info: str) -> Any:
        sock = self._sock
        transport = sock.transport
        if info == "is_readable":
            # an idle connection with bytes or an end waiting: the server closed it (or broke it)
            return bool(sock.buffer) or sock.eof
        if transport is None:
            return None
        if info == "ssl_object":
            return transport.get_extra_info("ssl_object")
        if info == "client_addr":
            return transport.get_extra_info("sockname")
        if info == "server_addr":
            return transport.get_extra_info("peername")
        if info == "socket":
            return transport.get_extra_info("socket")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Connections made by the running event loop (TCP_NODELAY is asyncio's default)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        sock = _Socket()
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                await loop.create_connection(lambda: sock, host, port, local_addr=local)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} in {timeout} s") from None
        except OSError as e:
            raise httpcore.ConnectError(str(e)) from None
        raw = sock.transport.get_extra_info("socket") if sock.transport is not None else None
        for option in socket_options or ():
            if raw is not None:
                raw.setsockopt(*option)
        return AsyncioStream(sock)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        sock = _Socket()
        try:
            async with asyncio.timeout(timeout):
                await loop.create_unix_connection(lambda: sock, path)
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection to {path} in {timeout} s") from None
        except OSError as e:
            raise httpcore.ConnectError(str(e)) from None
        return AsyncioStream(sock)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
