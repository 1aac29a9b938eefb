"""Incremental server-sent-events decoding.

Bytes arrive in arbitrary pieces from the network; :class:`SSEDecoder` turns them into complete
events (``event`` name and ``data`` text) without ever assuming a line fits in one piece, so a
200 KB ``data:`` line (a long tool argument) decodes as well as a two-byte one.

Two bounds keep a broken or hostile server from costing unbounded memory or time, each raising
:class:`~foldlog.errors.StreamProtocolError` as soon as it is passed (never after buffering the
whole thing): ``max_line_bytes`` for one line and for the data of one event, and
``max_noise_bytes`` for keep-alive comments, blank lines and other non-data lines in a row
without an event (an endless ``: keepalive`` or whitespace stream).
"""

from __future__ import annotations

from dataclasses import dataclass

from foldlog.errors import ConfigError, StreamProtocolError

MAX_LINE_BYTES = 8 * 1024 * 1024
MAX_NOISE_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"


class SSEDecoder:
    """Feed bytes, get the events they complete. Handles LF, CRLF and CR line ends and comments."""

    __slots__ = (
        "_buf",
        "_data",
        "_data_bytes",
        "_event",
        "_noise",
        "_pending_cr",
        "_scanned",
        "max_line_bytes",
        "max_noise_bytes",
    )

    def __init__(
        self, *, max_line_bytes: int | None = MAX_LINE_BYTES, max_noise_bytes: int | None = MAX_NOISE_BYTES
    ) -> None:
        for name, value in (("max_line_bytes", max_line_bytes), ("max_noise_bytes", max_noise_bytes)):
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be >= 1 or None, got {value}")
        self.max_line_bytes = max_line_bytes
        self.max_noise_bytes = max_noise_bytes
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already known to hold no line end (long lines stay linear)
        self._data: list[str] = []
        self._data_bytes = 0  # UTF-8 bytes of the data lines of the event being read
        self._noise = 0  # bytes of non-data lines since the last event with data
        self._event = ""
        self._pending_cr = False

    def feed(self, piece: bytes) -> list[SSEEvent]:
        if not piece:
            return []
        buf = self._buf
        if self._pending_cr:
            # a CR ended the previous piece: a LF right after it belongs to the same line end
            self._pending_cr = False
            if piece[:1] == b"\n":
                piece = piece[1:]
        buf += piece
        events: list[SSEEvent] = []
        start = 0
        n = len(buf)
        scan = self._scanned
        while start < n:
            lf = buf.find(b"\n", max(start, scan))
            cr = buf.find(b"\r", max(start, scan), lf if lf >= 0 else n)
            scan = 0
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < n and buf[nxt] == 0x0A:
                    nxt += 1
                elif nxt == n:
                    self._pending_cr = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                self._scanned = n - start
                self._check_line(n - start)
                break
            self._check_line(end - start)
            self._line(bytes(buf[start:end]).decode("utf-8", errors="replace"), events, nxt - start)
            start = nxt
        else:
            self._scanned = 0
        del buf[:start]
        return events

    def _check_line(self, size: int, what: str = "a line") -> None:
        limit = self.max_line_bytes
        if limit is not None and size > limit:
            raise StreamProtocolError(
                f"the stream sent {what} longer than {limit} bytes (max_line_bytes); "
                "it was abandoned before reading the rest"
            )

    def close(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line still counts (servers omit it)."""
        events: list[SSEEvent] = []
        if self._buf:
            self._line(bytes(self._buf).decode("utf-8", errors="replace"), events, len(self._buf))
            self._buf.clear()
        self._line("", events, 0)
        return events

    def _line(self, line: str, events: list[SSEEvent], size: int) -> None:
        """One line (``size`` bytes with its line end)."""
        if not line:
            if self._data:
                events.append(SSEEvent("\n".join(self._data), self._event or "message"))
                self._noise = 0
            else:
                self._count_noise(size)
            self._data = []
            self._data_bytes = 0
            self._event = ""
            return
        if line[0] == ":":
            self._count_noise(size)
            return  # comment / keep-alive
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data_bytes += size
            self._check_line(self._data_bytes, "an event")  # many data lines make one event: bound it too
            self._data.append(value)
            return
        if name == "event":
            self._event = value
        # "id" and "retry" do not matter for one-shot completions
        self._count_noise(size)

    def _count_noise(self, size: int) -> None:
        self._noise += size
        limit = self.max_noise_bytes
        if limit is not None and self._noise > limit:
            raise StreamProtocolError(
                f"the stream sent more than {limit} bytes of keep-alives, comments or blank lines "
                "without an event (max_noise_bytes)"
            )
