"""What the OpenAI-compatible provider does with a reply around httpx: read the rest of a stream's
body so its connection is kept, tell a JSON body, read an error body for its message; and the one
TLS context and HTTP/2 check every client shares (both cost a lookup that should happen once).
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import httpx

#: how much of an error body is read for its message
ERROR_BODY_LIMIT = 4096
#: what may follow a stream's [DONE] and still be read so that its connection is kept (see drain_rest)
DRAIN_BYTES = 64 * 1024
DRAIN_SECONDS = 0.25


async def drain_rest(pieces: AsyncIterator[bytes]) -> None:
    """Read what is left of a body after its ``[DONE]`` (normally only the end of the body): a
    response read to its end puts its connection back in the pool, one closed early closes it, and
    a new connection per request cost a fifth of B7's event loop. A body that goes on past
    ``DRAIN_BYTES`` or ``DRAIN_SECONDS`` is left to be closed. Runs after the reply was handed
    on (`OpenAICompatible._drain_and_close`): a server slow to end its body delays no one."""
    import httpx

    left = DRAIN_BYTES
    try:
        async with asyncio.timeout(DRAIN_SECONDS):
            async for piece in pieces:
                left -= len(piece)
                if left < 0:
                    return
    except (TimeoutError, httpx.HTTPError):
        pass  # the reply is complete; only the connection's reuse is lost


def is_json(response: httpx.Response) -> bool:
    content_type: str = response.headers.get("content-type", "")
    return content_type.split(";")[0].strip() == "application/json"


async def read_error_body(response: httpx.Response) -> str:
    import httpx

    data = bytearray()
    try:
        async for piece in response.aiter_bytes():
            data += piece
            if len(data) >= ERROR_BODY_LIMIT:
                break
    except httpx.HTTPError:
        pass  # the body is only for the message; the status says enough
    return bytes(data[:ERROR_BODY_LIMIT]).decode("utf-8", errors="replace")


_H2: list[bool] = []
_SSL: list[ssl.SSLContext] = []


def shared_ssl_context() -> ssl.SSLContext:
    """One verifying TLS context for every client: loading the CA bundle costs tens of ms each time."""
    if not _SSL:
        import httpx

        _SSL.append(httpx.create_ssl_context())
    return _SSL[0]


def h2_available() -> bool:
    if not _H2:
        import importlib.util

        _H2.append(importlib.util.find_spec("h2") is not None)
    return _H2[0]


__all__ = [
    "DRAIN_BYTES",
    "DRAIN_SECONDS",
    "ERROR_BODY_LIMIT",
    "drain_rest",
    "h2_available",
    "is_json",
    "read_error_body",
    "shared_ssl_context",
]
