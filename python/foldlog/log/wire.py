"""Request bodies built from the session core's cached message JSON.

Each derived message is serialised once (per wire style) in the Rust core; a request body is the
provider's header and trailer around those shared segments, sent as an async byte stream with a
``Content-Length``. A step on a long session therefore costs O(new messages), not O(history),
and every body, whichever way it is built, is written by the core (keys sorted, compact, UTF-8).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from foldlog import _core


class Body(Protocol):
    """A request body: the core's `_core.WireBody`, or any other implementation."""

    def __len__(self) -> int: ...
    def to_bytes(self) -> bytes: ...
    def chunks(self, size: int = ...) -> Iterable[bytes]: ...


class Segments(Protocol):
    """Messages serialised in one wire style: the core's cached `_core.WireSegments` (for a
    session holding media references, with the segments of the messages that reference media
    replaced by their resolved form: `foldlog.log.media_wire`), or any other implementation."""

    @property
    def style(self) -> str: ...
    def body(self, head: bytes, tail: bytes) -> Body: ...


#: bytes per piece handed to the HTTP client
CHUNK_SIZE = 65_536


@dataclass(frozen=True, slots=True)
class WireMessages:
    """A request's messages twice, consistent with each other: ``messages`` (what
    ``Request.messages`` holds, the session's ``wire_messages()``) and ``segments``, the same
    messages serialised by the core in one wire style (``"keep"``, ``"strip"``, ``"with-calls"``).
    """

    messages: Sequence[Mapping[str, Any]]
    segments: _core.WireSegments | Segments

    @property
    def style(self) -> str:
        return self.segments.style


class ChunkedBody:
    """A request body as httpx ``content``: an async iterable of bytes with a known length.

    Re-iterable (retries send it again); ``len()`` is the ``Content-Length`` to set, so the
    request is not chunk-encoded (DeepSeek, OpenAI and llama.cpp all take a plain length).
    """

    __slots__ = ("_body",)

    def __init__(self, body: Body) -> None:
        self._body = body

    def __len__(self) -> int:
        return len(self._body)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._body.chunks(CHUNK_SIZE):
            yield piece

    def to_bytes(self) -> bytes:
        """The whole body in one buffer (tests, logging)."""
        return self._body.to_bytes()


def frame(body: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The bytes before and after the messages in the encoded ``body`` (its ``"messages"`` value
    is ignored), written by the core."""
    from foldlog import _core

    return _core.encode_frame(body)


def chunked_body(wire: WireMessages, body: Mapping[str, Any]) -> ChunkedBody:
    """``body`` (built without messages) around the serialised messages of ``wire``."""
    head, tail = frame(body)
    return ChunkedBody(wire.segments.body(head, tail))


__all__ = ["CHUNK_SIZE", "ChunkedBody", "WireMessages", "chunked_body", "frame"]
