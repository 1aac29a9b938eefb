"""Non-text content in the log (issue 14, items 1-2): images, audio, files and documents in user
messages and tool results are accepted, stored, reloaded, derived as given and counted with a
documented estimate marked as such — and they never stop a batch from being written."""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session, TokenCount, Tokenizer, _core

MODEL = "deepseek-v4-flash"


def png(width: int, height: int) -> bytes:
    """A real (decodable) PNG of a black image."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = (b"\0" + b"\0\0\0" * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def data_url(image: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(image).decode()


def image_block(url: str, detail: str | None = None) -> dict[str, Any]:
    inner: dict[str, Any] = {"url": url}
    if detail is not None:
        inner["detail"] = detail
    return {"type": "image_url", "image_url": inner}


def test_an_image_does_not_stop_the_batch_from_being_written(tmp_path: Path) -> None:
    # the reproduction: 5 events in memory, 1 on disk after close
    p = tmp_path / "img.jsonl"
    s = Session.open(p, system="sys")
    s.model = MODEL  # as the Agent sets it: flushes count the batch with the exact tokenizer
    s.add({"role": "user", "content": "look"})
    s.add(
        {"role": "user", "content": [{"type": "text", "text": "this:"}, image_block(data_url(png(64, 64)))]}
    )
    s.add({"role": "assistant", "content": "a black square"})
    s.add({"role": "user", "content": "thanks"})
    s.flush()
    s.close()
    loaded = Session.load(p)
    assert len(loaded) == 5 == len(s)
    assert loaded.derive_messages() == s.derive_messages()


def test_blocks_are_stored_reloaded_and_derived_as_given(tmp_path: Path) -> None:
    blocks: list[dict[str, Any]] = [
        {"type": "text", "text": "what do these hold?"},
        image_block(data_url(png(300, 200)), "high"),
        {
            "type": "input_audio",
            "input_audio": {"data": base64.b64encode(b"RIFF....WAVE").decode(), "format": "wav"},
        },
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0x", "filename": "a.pdf"}},
        {
            "type": "image",
            "source": {
                "type": "base64",
                "media_type": "image/png",
                "data": base64.b64encode(png(8, 8)).decode(),
            },
        },
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "a short text"}},
    ]
    screenshot = [{"type": "text", "text": "screen:"}, image_block(data_url(png(1280, 720)))]
    p = tmp_path / "blocks.jsonl"
    with Session.open(p, system="sys") as s:
        s.model = MODEL
        s.add({"role": "user", "content": blocks})
        s.add(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "name": "shot", "arguments": "{}"}],
            }
        )
        s.add({"role": "tool", "tool_call_id": "c1", "name": "shot", "content": screenshot})
        s.add(
            {"role": "user", "content": [{"type": "text", "text": "only"}, {"type": "text", "text": "text"}]}
        )
    msgs = Session.load(p).derive_messages()
    assert msgs[1]["content"] == blocks, "a message with non-text blocks derives as the list, unchanged"
    assert msgs[3]["content"] == screenshot, "a tool result may hold blocks too"
    assert msgs[4]["content"] == "only\ntext", "text-only content is joined into a string, as before"
    assert Session.load(p).events[2]["data"]["message"]["content"] is None, "None is recorded as given"


def test_counts_estimate_non_text_parts_and_say_so(tmp_path: Path) -> None:
    tok = Tokenizer.for_model(MODEL)
    text = tok.count_message({"role": "user", "content": "what is it?"})
    assert text.exact and isinstance(text, TokenCount) and isinstance(text, int)
    for block, cost in [
        (image_block(data_url(png(1024, 1024))), 765),  # 768×768 after scaling: 4 tiles
        (image_block(data_url(png(1024, 1024)), "low"), 85),
        (image_block(data_url(png(4096, 2048)), "high"), 1105),  # 1536×768: 3 × 2 tiles
        (image_block("https://example.com/a.png"), 1445),  # size unknown: the most an image costs
        ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}, 1000),
        ({"type": "file", "file": {"file_id": "file-abc"}}, 2000),
    ]:
        n = tok.count_message({"role": "user", "content": [{"type": "text", "text": "what is it?"}, block]})
        assert (int(n), n.exact) == (text + cost, False), block["type"]
    p = tmp_path / "c.jsonl"
    with Session.open(p, system="sys") as s:
        s.model = MODEL
        s.add({"role": "user", "content": "plain"})
        assert s.token_count().exact
        s.add({"role": "user", "content": [image_block(data_url(png(512, 512)))]})
        total = s.token_count()
        assert (
            not total.exact
            and total == sum(tok.count_message(m) for m in s.derive_messages()) + tok.request_overhead()
        )
    # the per-event count kept in the log says it is partly estimated
    events = [json.loads(line) for line in p.read_text().splitlines()[1:]]
    assert [e.get("tokensEstimated", False) for e in events] == [False, False, True]
    assert all(e["tokens"]["deepseek-v4"] > 0 for e in events[1:]), "(the system prompt was flushed by open)"
    # and a resumed session reads it back (nothing recounted, still marked estimated)
    again = Session.open(p)
    try:
        resumed = again.token_count(MODEL)
        assert resumed == total and not resumed.exact
        assert _core.cached_token_events(again._core) == 3, (
            "the two counted in the log, the system prompt now"
        )
    finally:
        again.close()
    # a model without an exact tokenizer is never exact
    assert not Session(system="s").token_count("some-local-model").exact


@pytest.mark.parametrize(
    ("message", "where"),
    [
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]},
            "content[0].image_url.url",
        ),
        (
            {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u", "detail": "big"}}]},
            "content[0].image_url.detail",
        ),
        (
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "input_audio", "input_audio": {"data": "x"}}],
            },
            "content[0].input_audio.format",
        ),
        (
            {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "data": "x"}}]},
            "content[0].source.media_type",
        ),
    ],
)
def test_malformed_blocks_are_refused_naming_the_place(message: dict[str, Any], where: str) -> None:
    from foldlog import InvalidEventError

    s = Session(system="s")
    with pytest.raises(InvalidEventError, match=re.escape(where + " ")):
        s.add(message)
    assert len(s) == 1
