"""Request bodies built from the session core's cached message JSON.

Each derived message is serialised once (per wire style) in the Rust core; a request body is the
provider's header and trailer around those shared segments, sent as an async byte stream with a
``Content-Length``. A step on a long session therefore costs O(new messages), not O(history),
and the bytes are exactly ``json.dumps(body, ensure_ascii=False, separators=(",", ":"),
sort_keys=True)`` of the same body (what ``OpenAICompatible.encode_body`` writes).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from foldlog import _core

#: bytes per piece handed to the HTTP client
CHUNK_SIZE = 65_536


class MessageList(Sequence[Mapping[str, Any]]):
    """A read-only list of messages: the first ``count`` items of ``head`` (a list its owner only
    ever appends to), then ``tail``. Taking one costs O(1) however long the history is."""

    __slots__ = ("_count", "_head", "_tail")

    def __init__(self, head: list[Mapping[str, Any]], count: int, tail: list[Mapping[str, Any]]) -> None:
        self._head = head
        self._count = count
        self._tail = tail

    def __len__(self) -> int:
        return self._count + len(self._tail)

    def parts(self) -> tuple[list[Mapping[str, Any]], int, list[Mapping[str, Any]]]:
        """``(head, count, tail)``: the messages are ``head[:count] + tail``, and ``head`` is only
        ever appended to (work done on ``head[:count]`` stays valid while it is the same list)."""
        return self._head, self._count, self._tail

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[Mapping[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | list[Mapping[str, Any]]:
        if isinstance(index, slice):
            return list(self)[index]
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"message index {index} out of range ({n} messages)")
        return self._head[i] if i < self._count else self._tail[i - self._count]

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        yield from islice(self._head, self._count)
        yield from self._tail

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageList({list(self)!r})"


@dataclass(frozen=True, slots=True)
class WireMessages:
    """A request's messages twice, consistent with each other: ``messages`` (what
    ``Request.messages`` holds, the session's ``wire_messages()``) and ``segments``, the same
    messages serialised by the core in one wire style (``"keep"``, ``"strip"``, ``"with-calls"``).
    """

    messages: Sequence[Mapping[str, Any]]
    segments: _core.WireSegments

    @property
    def style(self) -> str:
        return self.segments.style


class ChunkedBody:
    """A request body as httpx ``content``: an async iterable of bytes with a known length.

    Re-iterable (retries send it again); ``len()`` is the ``Content-Length`` to set, so the
    request is not chunk-encoded (DeepSeek, OpenAI and llama.cpp all take a plain length).
    """

    __slots__ = ("_body",)

    def __init__(self, body: _core.WireBody) -> None:
        self._body = body

    def __len__(self) -> int:
        return len(self._body)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._body.chunks(CHUNK_SIZE):
            yield piece

    def to_bytes(self) -> bytes:
        """The whole body in one buffer (tests, logging)."""
        return self._body.to_bytes()


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def frame(body: Mapping[str, Any]) -> tuple[bytes, bytes]:
    """The bytes before and after the messages in the encoded ``body`` (its ``"messages"`` value
    is ignored): the keys sorted, each ``key:value`` written as ``json.dumps`` writes it."""
    before: list[str] = []
    after: list[str] = []
    for key in sorted(body):
        if key == "messages":
            continue
        (before if key < "messages" else after).append(f"{_dumps(key)}:{_dumps(body[key])}")
    head = "{" + "".join(item + "," for item in before) + '"messages":['
    tail = "]" + "".join("," + item for item in after) + "}"
    return head.encode(), tail.encode()


def chunked_body(wire: WireMessages, body: Mapping[str, Any]) -> ChunkedBody:
    """``body`` (built without messages) around the serialised messages of ``wire``."""
    head, tail = frame(body)
    return ChunkedBody(wire.segments.body(head, tail))


__all__ = ["CHUNK_SIZE", "ChunkedBody", "MessageList", "WireMessages", "chunked_body", "frame"]
