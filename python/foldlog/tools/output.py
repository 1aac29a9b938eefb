"""Tool output bound for the log: valid UTF-8 text of bounded size, whatever the tool produced.

A tool may print 100 MB, return bytes that are not UTF-8, or return a ``str`` holding lone
surrogates (``os.fsdecode`` of a bad file name), which no UTF-8 encoder accepts. What reaches the
log is text: invalid bytes and lone surrogates become U+FFFD (the count is reported so the result
can record it; a surrogate pair held as two code points is joined: `foldlog.log.text.clean_text`),
and output over the limit keeps its first and last ``limit // 2`` bytes, cut on character
boundaries, around a marker that says how many bytes were left out. A returned value that is not
text is written as JSON (`json_text`: NaN and ±Infinity as ``null``).

:class:`HeadTail` does the same for a byte stream read piece by piece (a subprocess pipe): it
keeps only the head and the tail, so memory stays bounded however much the command prints.
"""

from __future__ import annotations

import json
import math
from typing import Any

from foldlog.errors import ConfigError
from foldlog.log.text import clean_text  # the one rule for lone surrogates (tool output, streams)

_MARKER = "\n\n[… {n} bytes of tool output omitted …]\n\n"
# The marker is not counted against the limit, so a result capped once (by the bash tool) and
# again (by the runner, with the same limit) passes the second cap unchanged.
MARKER_SLACK = 64
_ENCODE_STEP = 1 << 20  # characters encoded at a time when only the byte length is needed
_REPLACEMENT_UTF8 = "\ufffd".encode()


def marker(omitted: int) -> str:
    return _MARKER.format(n=omitted)


def json_text(value: Any) -> str:
    """A tool's returned value (a dict, a list, a number) as the JSON text of its result.

    NaN and ±Infinity have no JSON spelling (Python's ``json`` writes ``NaN``, which no strict
    JSON reader accepts): they become ``null``, as JavaScript's ``JSON.stringify`` writes them.
    What is not JSON at all (a set, a datetime) is written as its ``str``."""
    try:
        return json.dumps(value, ensure_ascii=False, default=str, allow_nan=False)
    except ValueError:  # a non-finite float somewhere (or a circular reference: raised again)
        return json.dumps(_finite(value), ensure_ascii=False, default=str, allow_nan=False)


def _finite(value: Any) -> Any:
    """``value`` with every NaN/±Infinity float (in dicts, lists and tuples) replaced by ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def decode_output(data: bytes | bytearray | memoryview) -> tuple[str, int]:
    """UTF-8 text of ``data`` with invalid bytes replaced by U+FFFD, and how many U+FFFD were added."""
    raw = bytes(data)
    try:
        return raw.decode("utf-8"), 0
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        # U+FFFD characters that were in the data already are not replacements
        return text, text.count("\ufffd") - raw.count(_REPLACEMENT_UTF8)


def utf8_len(text: str) -> int:
    """The UTF-8 length of ``text`` without building the whole encoding at once."""
    if text.isascii():
        return len(text)
    return sum(
        len(text[i : i + _ENCODE_STEP].encode("utf-8", errors="surrogatepass"))
        for i in range(0, len(text), _ENCODE_STEP)
    )


def cap_text(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to its first and last ``limit // 2`` UTF-8 bytes around a marker; the bytes left out.

    Text within ``limit`` (plus the marker's size, see ``MARKER_SLACK``) comes back unchanged.
    Only the head and tail are encoded, so a 100 MB string costs no 100 MB copy. Lone surrogates
    pass through (as 3 bytes each): :func:`clean_text` the result.
    """
    if len(text) * 4 <= limit:  # cannot exceed the limit even if every character took 4 bytes
        return text, 0
    total = utf8_len(text)
    if total <= limit + MARKER_SLACK:
        return text, 0
    half = limit // 2
    # every character is at least one byte: the first/last `half` characters hold enough bytes
    head = bytearray(text[:half].encode("utf-8", errors="surrogatepass")[:half])
    head_text = head[: _complete_prefix(head)].decode("utf-8", errors="surrogatepass")
    tail_all = text[max(len(text) - half, 0) :].encode("utf-8", errors="surrogatepass")
    tail = bytearray(tail_all[len(tail_all) - half :])
    tail_text = tail[_first_char_start(tail) :].decode("utf-8", errors="surrogatepass")
    omitted = total - utf8_len(head_text) - utf8_len(tail_text)
    return f"{head_text}{marker(omitted)}{tail_text}", omitted


def cap_output(text: str, limit: int) -> str:
    """Keep the first and last ``limit // 2`` UTF-8 bytes (cut on character boundaries) with a marker."""
    return cap_text(text, limit)[0]


def _complete_prefix(data: bytes | bytearray) -> int:
    """Length of ``data`` without a multi-byte character cut off at its end."""
    n = len(data)
    for i in range(n - 1, max(n - 4, -1), -1):
        b = data[i]
        if b & 0xC0 != 0x80:  # ASCII or a lead byte: the last character starts here
            need = 2 if b >> 5 == 0b110 else 3 if b >> 4 == 0b1110 else 4 if b >> 3 == 0b11110 else 1
            return n if i + need <= n else i
    return n


def _first_char_start(data: bytes | bytearray) -> int:
    """Offset of the first byte of ``data`` that is not the continuation of a cut-off character."""
    for i in range(min(3, len(data))):
        if data[i] & 0xC0 != 0x80:
            return i
    return min(3, len(data))


class HeadTail:
    """Keeps the first and last ``limit // 2`` bytes of a byte stream of any length, and its size."""

    __slots__ = ("_half", "head", "tail", "total")

    def __init__(self, limit: int) -> None:
        if limit < 2:
            raise ConfigError(f"the output limit must be at least 2 bytes, got {limit}")
        self._half = limit // 2
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)  # slices of a view copy nothing (a tool may hand over 100 MB)
        self.total += len(view)
        room = self._half - len(self.head)
        if room > 0:
            self.head += view[:room]
            view = view[room:]
        if not len(view):
            return
        if len(view) >= self._half:
            self.tail = bytearray(view[len(view) - self._half :])
            return
        self.tail += view
        extra = len(self.tail) - self._half
        if extra > 0:
            del self.tail[:extra]  # deleting from the front of a bytearray is cheap

    @property
    def omitted(self) -> int:
        return self.total - len(self.head) - len(self.tail)

    def render(self) -> tuple[str, int, int]:
        """``(text, bytes omitted, U+FFFD replacements)``; the text has a marker when bytes were left out."""
        if not self.omitted:
            text, replaced = decode_output(self.head + self.tail)
            return text, 0, replaced
        head = self.head[: _complete_prefix(self.head)]
        tail = self.tail[_first_char_start(self.tail) :]
        head_text, r1 = decode_output(head)
        tail_text, r2 = decode_output(tail)
        omitted = self.total - len(head) - len(tail)
        return f"{head_text}{marker(omitted)}{tail_text}", omitted, r1 + r2


__all__ = [
    "MARKER_SLACK",
    "HeadTail",
    "cap_output",
    "cap_text",
    "clean_text",
    "decode_output",
    "json_text",
    "marker",
    "utf8_len",
]
