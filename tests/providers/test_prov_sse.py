from __future__ import annotations

from foldlog.providers.http.sse import SSEDecoder, SSEEvent
from tests.conftest import SHARED


def _decode(pieces: list[bytes]) -> list[SSEEvent]:
    d = SSEDecoder()
    out: list[SSEEvent] = []
    for p in pieces:
        out += d.feed(p)
    return out + d.close()


def test_every_split_point_gives_the_same_events() -> None:
    raw = (
        SHARED.joinpath("corpus", "langchaingo-httprr") / "TestFunctionCall-streaming-deepseek.response.sse"
    ).read_bytes()
    whole = _decode([raw])
    assert whole[-1].data == "[DONE]" and len(whole) > 5
    for cut in range(0, len(raw), 37):
        assert _decode([raw[:cut], raw[cut:]]) == whole


def test_line_ends_comments_event_names_and_multiline_data() -> None:
    raw = b': keep-alive\r\nevent: error\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata:x\rdata: y\r\rdata: z\n\n'
    want = [SSEEvent('{"a":\n1}', "error"), SSEEvent("x\ny"), SSEEvent("z")]
    assert _decode([raw]) == want
    assert _decode([bytes([b]) for b in raw]) == want  # one byte at a time, CR/LF split apart


def test_last_event_without_blank_line_is_kept() -> None:
    assert _decode([b"data: a\n\ndata: b"]) == [SSEEvent("a"), SSEEvent("b")]


def test_utf8_split_inside_a_character() -> None:
    raw = "data: héllo — 世界\n\n".encode()
    assert _decode([bytes([b]) for b in raw]) == [SSEEvent("héllo — 世界")]


def test_a_huge_line_in_small_pieces_stays_linear() -> None:
    line = b"data: " + b"x" * 400_000 + b"\n\n"
    events = _decode([line[i : i + 16] for i in range(0, len(line), 16)])
    assert events == [SSEEvent("x" * 400_000)]
