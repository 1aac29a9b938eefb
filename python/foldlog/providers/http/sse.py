"""Incremental server-sent-events decoding.

Bytes arrive in arbitrary pieces from the network; :class:`SSEDecoder` turns them into complete
events (``event`` name and ``data`` text) without ever assuming a line fits in one piece, so a
200 KB ``data:`` line (a long tool argument) decodes as well as a two-byte one.

The decoding is the core's (``rust/foldlog-core/src/sse.rs``). Two bounds keep a broken or
hostile server from costing unbounded memory or time, each raising
:class:`~foldlog.errors.StreamProtocolError` as soon as it is passed (never after buffering the
whole thing): ``max_line_bytes`` for one line and for the data of one event, and
``max_noise_bytes`` for keep-alive comments, blank lines and other non-data lines in a row
without an event (an endless ``: keepalive`` or whitespace stream).
"""

from __future__ import annotations

from dataclasses import dataclass

from foldlog import _core
from foldlog.errors import ConfigError

MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_NOISE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"


class SSEDecoder:
    """Feed bytes, get the events they complete. Handles LF, CRLF and CR line ends and comments.

    The decoding is the core's (``foldlog._core.SseDecoder``, ``rust/foldlog-core/src/sse.rs``);
    this class checks the bounds given and makes :class:`SSEEvent` objects of its events."""

    __slots__ = ("_core", "max_line_bytes", "max_noise_bytes")

    def __init__(
        self, *, max_line_bytes: int | None = MAX_LINE_BYTES, max_noise_bytes: int | None = MAX_NOISE_BYTES
    ) -> None:
        for name, value in (("max_line_bytes", max_line_bytes), ("max_noise_bytes", max_noise_bytes)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 or None, got {value}")
        self.max_line_bytes = max_line_bytes
        self.max_noise_bytes = max_noise_bytes
        self._core = _core.SseDecoder(max_line_bytes, max_noise_bytes)

    def feed(self, piece: bytes) -> list[SSEEvent]:
        """The events ``piece`` completes; :class:`StreamProtocolError` as soon as a bound is passed."""
        return [SSEEvent(data, event) for data, event in self._core.feed(piece)]

    def close(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line still counts (servers omit it)."""
        return [SSEEvent(data, event) for data, event in self._core.close()]
