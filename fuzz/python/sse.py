"""`SSEDecoder` on arbitrary bytes split at arbitrary points: the same events however the bytes
are split (one piece, byte by byte, at points chosen by the input); only FoldlogError subclasses
escape (e.g. a bound on line length: an input that trips it is not compared)."""

from __future__ import annotations

from foldlog.errors import FoldlogError
from foldlog.providers.http.sse import SSEDecoder, SSEEvent


def decode(pieces: list[bytes]) -> list[SSEEvent]:
    d = SSEDecoder()
    events: list[SSEEvent] = []
    for p in pieces:
        events += d.feed(p)
    return events + d.close()


def splits(data: bytes) -> list[list[bytes]]:
    """Whole, byte by byte, and cut where the first byte's bits and the stream itself say."""
    step = (data[0] % 7) + 1 if data else 1
    cuts = sorted({i for i in range(1, len(data)) if data[i] % step == 0 or data[i - 1] in b"\r\n"})
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    return [[data], [data[i : i + 1] for i in range(len(data))], pieces]


def check(data: bytes) -> None:
    results = []
    for pieces in splits(data):
        try:
            results.append(decode(pieces))
        except FoldlogError:
            return
    for other in results[1:]:
        assert other == results[0], f"split changed the events: {results[0]!r} != {other!r}"


if __name__ == "__main__":
    from _run import fuzz

    fuzz(check)
