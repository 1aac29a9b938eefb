"""Incremental server-sent-events decoding.

Bytes arrive in arbitrary pieces from the network; :class:`SSEDecoder` turns them into complete
events (``event`` name and ``data`` text) without ever assuming a line fits in one piece, so a
200 KB ``data:`` line (a long tool argument) decodes as well as a two-byte one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"


class SSEDecoder:
    """Feed bytes, get the events they complete. Handles LF, CRLF and CR line ends and comments."""

    __slots__ = ("_buf", "_data", "_event", "_pending_cr", "_scanned")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf already known to hold no line end (long lines stay linear)
        self._data: list[str] = []
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
                break
            self._line(bytes(buf[start:end]).decode("utf-8", errors="replace"), events)
            start = nxt
        else:
            self._scanned = 0
        del buf[:start]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: a last event without its blank line still counts (servers omit it)."""
        events: list[SSEEvent] = []
        if self._buf:
            self._line(bytes(self._buf).decode("utf-8", errors="replace"), events)
            self._buf.clear()
        self._line("", events)
        return events

    def _line(self, line: str, events: list[SSEEvent]) -> None:
        if not line:
            if self._data:
                events.append(SSEEvent("\n".join(self._data), self._event or "message"))
            self._data = []
            self._event = ""
            return
        if line[0] == ":":
            return  # comment / keep-alive
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        # "id" and "retry" do not matter for one-shot completions
