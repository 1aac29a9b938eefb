"""Media stored once (issue 32, part 2): a stored session's images, audio and files go to the
media store beside its log, the events hold references, requests and exports get the data back,
token counts stay what they were."""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from foldlog import InvalidEventError, Session
from foldlog.errors import MissingMediaError
from foldlog.interchange import convert
from foldlog.interchange.exports import export
from foldlog.interchange.import_logs import plan_logs, write_logs
from foldlog.log.forks import fork_session
from foldlog.log.media import REF_PREFIX, extract_log
from foldlog.log.wire import chunked_body
from foldlog.stores import FileStore
from foldlog.stores.media import FileMediaStore, MediaStore, referenced_hashes, sha256_of
from foldlog.stores.retention import remove_unreferenced_media

TOOL_CALL = {"id": "c1", "type": "function", "function": {"name": "shot", "arguments": "{}"}}


def png(width: int, height: int, body: bytes = b"") -> bytes:
    return b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" + struct.pack(">II", width, height) + bytes(13) + body


def jpeg(width: int, height: int) -> bytes:
    frame = b"\xff\xc0\x00\x11\x08" + struct.pack(">HH", height, width) + bytes(12)
    return b"\xff\xd8\xff\xe1\x00\x10" + bytes(14) + frame + bytes(64)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def data_url(media_type: str, data: bytes) -> str:
    return f"data:{media_type};base64,{b64(data)}"


SCREEN = png(1920, 1080, b"screen" * 500)
PHOTO = jpeg(4032, 3024)
AUDIO = b"RIFF\x00\x00\x00\x00WAVEfmt " + bytes(200)
PDF = b"%PDF-1.4\n" + bytes(300)


def user_blocks(detail: str | None = None) -> dict[str, Any]:
    image: dict[str, Any] = {"url": data_url("image/png", SCREEN)}
    if detail is not None:
        image["detail"] = detail
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": "look at these"},
            {"type": "image_url", "image_url": image},
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": b64(PHOTO)}},
            {"type": "input_audio", "input_audio": {"data": b64(AUDIO), "format": "wav"}},
            {"type": "file", "file": {"file_data": data_url("application/pdf", PDF), "filename": "a.pdf"}},
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": b64(PDF)},
            },
            {"type": "image_url", "image_url": {"url": data_url("image/png", b"not an image header")}},
        ],
    }


def fill(s: Session) -> None:
    """The same conversation in any session: every block type, the same image twice, a tool
    result holding a screenshot (which the wire moves to a user message)."""
    s.add(user_blocks())
    s.add(
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN), "detail": "low"}}
            ],
        }
    )
    s.add({"role": "assistant", "content": None, "tool_calls": [TOOL_CALL]})
    s.append_event(
        "tool/result",
        {
            "turn": 1,
            "step": 1,
            "message": {
                "role": "tool",
                "toolCallId": "c1",
                "toolName": "shot",
                "content": [
                    {"type": "text", "text": "taken"},
                    {"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN)}},
                ],
                "isError": False,
            },
        },
        surface_op="append",
    )
    s.append_events(
        [
            {
                "type": "user/message",
                "data": {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", PHOTO)}}],
                },
                "surfaceOp": "append",
            }
        ]
    )


class CountingStore:
    """A media store that counts its reads (laziness is observable)."""

    def __init__(self, inner: MediaStore) -> None:
        self.inner, self.reads = inner, 0

    def put(self, data: bytes) -> str:
        return self.inner.put(data)

    def get(self, sha256: str) -> bytes:
        self.reads += 1
        return self.inner.get(sha256)

    def hashes(self) -> set[str]:
        return self.inner.hashes()

    def remove_unreferenced(self, referenced: Iterable[str], *, grace: float = 3600.0) -> int:
        return self.inner.remove_unreferenced(referenced, grace=grace)


@pytest.fixture
def inline() -> Session:
    s = Session("sys", id="inline")
    fill(s)
    return s


def stored(root: Path, sid: str = "s1") -> Session:
    s = Session.open(FileStore(root), sid, system="sys")
    fill(s)
    s.flush()
    return s


def test_media_is_stored_once_beside_the_logs(tmp_path: Path) -> None:
    with stored(tmp_path, "a"), stored(tmp_path, "b"):
        pass
    media = tmp_path / "media"
    names = sorted(p.name for p in media.iterdir())
    want = sorted({sha256_of(x) for x in (SCREEN, PHOTO, AUDIO, PDF, b"not an image header")})
    assert names == want, "each content once, whatever the number of blocks and sessions"
    assert (media / sha256_of(SCREEN)).read_bytes() == SCREEN
    assert media.stat().st_mode & 0o777 == 0o700
    assert (media / sha256_of(SCREEN)).stat().st_mode & 0o777 == 0o600
    for sid in ("a", "b"):
        text = (tmp_path / f"{sid}.jsonl").read_text()
        for data in (SCREEN, PHOTO, AUDIO, PDF):
            assert b64(data) not in text
        assert text.count(REF_PREFIX) == 9, "one reference text per block of data"
        assert referenced_hashes((tmp_path / f"{sid}.jsonl").read_bytes()) == set(want)


def test_a_reference_records_hash_type_size_and_image_size(tmp_path: Path) -> None:
    with stored(tmp_path) as s:
        blocks = s.events[1]["data"]["content"]
    sha = sha256_of(SCREEN)
    assert blocks[1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{REF_PREFIX}{sha}"},
        "media": {
            "sha256": sha,
            "mediaType": "image/png",
            "size": len(SCREEN),
            "width": 1920,
            "height": 1080,
        },
    }
    assert blocks[2]["media"]["width"] == 4032 and blocks[2]["media"]["height"] == 3024
    assert blocks[2]["source"]["data"] == f"{REF_PREFIX}{sha256_of(PHOTO)}"
    assert blocks[3]["media"] == {"sha256": sha256_of(AUDIO), "mediaType": "audio/wav", "size": len(AUDIO)}
    assert blocks[4]["media"]["mediaType"] == "application/pdf" and "width" not in blocks[4]["media"]
    assert "width" not in blocks[6]["media"], "an image whose header cannot be read has no size"


def test_token_counts_are_unchanged(tmp_path: Path, inline: Session) -> None:
    with stored(tmp_path) as s:
        assert s.token_count() == inline.token_count()
        assert s.token_count(model="gpt-4o") == inline.token_count(model="gpt-4o")
        assert s.token_counts(model="gpt-4o") == inline.token_counts(model="gpt-4o")
    again = Session.load(tmp_path / "s1.jsonl")
    assert again.token_count() == inline.token_count()
    # and the figure is the image's own: a 1920×1080 screenshot at detail high is not the
    # unknown-size maximum
    lone_inline = Session()
    lone_inline.add(
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN)}}],
        }
    )
    with Session.open(FileStore(tmp_path), "lone") as lone:
        lone.add(
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN)}}],
            }
        )
        assert lone.token_count() == lone_inline.token_count()
        assert lone.events[0]["data"]["content"][0]["media"]["width"] == 1920


def test_requests_carry_the_data_again(tmp_path: Path, inline: Session) -> None:
    with stored(tmp_path) as s:
        assert s.wire_messages() == inline.wire_messages()
        assert REF_PREFIX not in json.dumps(list(s.wire_messages()))
        for style in ("keep", "strip", "with-calls"):
            frame = {"model": "m", "stream": True}
            mine = chunked_body(s.wire_request(style), frame).to_bytes()
            theirs = chunked_body(inline.wire_request(style), frame).to_bytes()
            assert mine == theirs, style
        # the screenshot of the tool result went to a user message, resolved there too
        moved = [m for m in s.wire_messages() if m["role"] == "user" and "Attachments" in json.dumps(m)]
        assert moved and b64(SCREEN) in json.dumps(moved[0])


def test_references_are_resolved_only_when_a_request_or_an_export_needs_them(tmp_path: Path) -> None:
    with stored(tmp_path):
        pass
    with Session.open(FileStore(tmp_path), "s1") as s:
        assert s.media is not None
        counting = CountingStore(s.media)
        s.media = counting
        derived = s.derive_messages()
        assert s.events[1]["data"]["content"][1]["media"]["sha256"] == sha256_of(SCREEN)
        s.token_count()
        s.plan_history()
        s.add({"role": "user", "content": "more"})
        s.flush()
        assert len(derived) == 6 and derived[0]["content"] == "sys" and derived[3]["role"] == "assistant"
        assert counting.reads == 0, "deriving, counting, planning and appending read no media"
        first = derived[1]
        assert first["content"][1]["image_url"]["url"] == data_url("image/png", SCREEN), "resolved when read"
        assert derived[1] is first and counting.reads == 5, "once per message, and per content"
        s.wire_messages()
        assert counting.reads == 5 + 5, "a request reads each content once"


def test_a_missing_blob_names_its_hash_and_session(tmp_path: Path) -> None:
    with stored(tmp_path):
        pass
    (tmp_path / "media" / sha256_of(PHOTO)).unlink()
    s = Session.load(tmp_path / "s1.jsonl")
    with pytest.raises(MissingMediaError) as err:
        s.wire_messages()
    assert err.value.sha256 == sha256_of(PHOTO) and err.value.session == "s1"
    assert sha256_of(PHOTO) in str(err.value) and "s1" in str(err.value)
    with pytest.raises(MissingMediaError):
        export(s, "openai")
    # a log read from bytes has no media store: the error says so
    loose = Session.from_bytes((tmp_path / "s1.jsonl").read_bytes())
    with pytest.raises(MissingMediaError, match="no media store"):
        loose.wire_messages()


def test_exports_inline_the_media(tmp_path: Path, inline: Session) -> None:
    with stored(tmp_path) as s:
        for fmt in ("atif", "claude-code", "codex"):
            text = export(s, fmt).text
            assert REF_PREFIX not in text and b64(SCREEN) in text, fmt
            assert text.count(b64(SCREEN)) == export(inline, fmt).text.count(b64(SCREEN)), fmt
        assert export(s, "openai").text == export(inline, "openai").text
        assert export(s, "openai", wire=True).text == export(inline, "openai", wire=True).text


def test_sessions_without_a_store_keep_media_inline(inline: Session, tmp_path: Path) -> None:
    assert inline.media is None
    assert b64(SCREEN) in inline.to_bytes().decode()
    assert REF_PREFIX not in inline.to_bytes().decode()
    loaded = Session.from_bytes(inline.to_bytes())
    loaded.add(user_blocks())
    assert REF_PREFIX not in loaded.to_bytes().decode()
    # a session loaded from a file reads references but appends in memory, inline
    with stored(tmp_path):
        pass
    read = Session.load(tmp_path / "s1.jsonl")
    read.add(
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", PDF)}}]}
    )
    assert b64(PDF) in read.to_bytes().decode()
    assert read.wire_messages()[-1]["content"][0]["image_url"]["url"] == data_url("image/png", PDF)


def test_data_that_would_not_round_trip_stays_inline(tmp_path: Path) -> None:
    wrapped = b64(SCREEN)[:76] + "\n" + b64(SCREEN)[76:]  # MIME line breaks
    odd = [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{wrapped}"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo"}},  # unpadded
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/b.png"}},
        {"type": "file", "file": {"file_id": "file-1"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "aGVsbG8="}},
    ]
    with Session.open(FileStore(tmp_path), "odd") as s:
        s.add({"role": "user", "content": odd})
        assert s.events[0]["data"]["content"] == odd
        assert s.wire_messages()[0]["content"][0] == odd[0]
    assert not (tmp_path / "media").exists()


def test_the_core_checks_a_reference(tmp_path: Path) -> None:
    sha = sha256_of(SCREEN)
    good: dict[str, Any] = {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{REF_PREFIX}{sha}"},
        "media": {"sha256": sha, "mediaType": "image/png", "size": 3},
    }
    s = Session()
    s.add({"role": "user", "content": [good]})
    bad_cases = [
        (
            {**good, "media": {**good["media"], "sha256": "XYZ"}},
            r"content\[0\]\.media\.sha256 must be 64 lowercase hex",
        ),
        (
            {**good, "image_url": {"url": f"data:image/png;base64,{REF_PREFIX}{'0' * 64}"}},
            r"content\[0\]\.image_url\.url must be the reference text",
        ),
        (
            {"type": "image_url", "image_url": good["image_url"]},
            r"content\[0\] holds a media reference without its \"media\"",
        ),
        ({**good, "media": {**good["media"], "width": 10}}, r"content\[0\]\.media\.width"),
        ({**good, "media": {**good["media"], "size": "3"}}, r"content\[0\]\.media\.size"),
    ]
    for block, pattern in bad_cases:
        with pytest.raises(InvalidEventError, match=pattern):
            s.add({"role": "user", "content": [block]})
    assert len(s) == 1, "nothing refused was recorded"


def test_forks_and_subagents_read_the_same_media(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    with stored(tmp_path) as s:
        wire = list(s.wire_messages())
        fork = fork_session(s, at_seq=2)
        with fork:
            fork.add(
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", PHOTO)}}],
                }
            )
            assert list(fork.wire_messages()[:3]) == wire[:3]
    child = Session.open(store, "s1.child", parent={"kind": "subagent", "id": "s1", "callId": "c1"})
    child.add(
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN)}}],
        }
    )
    child.close()
    assert len(list((tmp_path / "media").iterdir())) == 5, "the child's screenshot is the parent's"
    assert Session.load(tmp_path / "s1.child.jsonl").wire_messages()[0]["content"][0]["image_url"][
        "url"
    ] == data_url("image/png", SCREEN)
    assert wire[1]["content"][1]["image_url"]["url"] == data_url("image/png", SCREEN)


def test_unreferenced_media_are_removed(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    with Session.open(store, "keep") as s:
        s.add(
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN)}}],
            }
        )
    with Session.open(store, "gone") as s:
        s.add(
            {
                "role": "user",
                "content": [{"type": "image_url", "image_url": {"url": data_url("image/png", SCREEN)}}],
            }
        )
        s.add(
            {
                "role": "user",
                "content": [{"type": "input_audio", "input_audio": {"data": b64(AUDIO), "format": "wav"}}],
            }
        )
    media = FileMediaStore(tmp_path / "media")
    assert media.hashes() == {sha256_of(SCREEN), sha256_of(AUDIO)}
    (tmp_path / "gone.jsonl").unlink()
    referenced = set().union(*(referenced_hashes(store.read_log(i.id)) for i in store.list_sessions()))
    assert remove_unreferenced_media(store) == 0, "stored within the grace: kept"
    assert media.remove_unreferenced(referenced, grace=0) == 1
    assert media.hashes() == {sha256_of(SCREEN)}
    assert Session.load(tmp_path / "keep.jsonl").wire_messages()[0]["content"][0]["image_url"][
        "url"
    ] == data_url("image/png", SCREEN)


def test_import_stores_the_transcripts_media(tmp_path: Path) -> None:
    source = tmp_path / "chat.json"
    source.write_text(json.dumps([user_blocks(), {"role": "assistant", "content": "I see"}]))
    out = tmp_path / "logs"
    (conv,) = convert("openai", source)
    (imported,) = write_logs(plan_logs(conv, out / "imp.jsonl", "imp"))
    text = (out / "imp.jsonl").read_text()
    assert b64(SCREEN) not in text and REF_PREFIX in text and imported["id"] == "imp"
    assert (out / "media" / sha256_of(SCREEN)).read_bytes() == SCREEN
    s = Session.load(out / "imp.jsonl")
    reference = Session()
    reference.add(user_blocks())
    assert s.wire_messages()[0]["content"] == reference.wire_messages()[0]["content"]
    assert s.token_count() == Session.from_bytes(s.to_bytes()).token_count()
    # a log's bytes without base64 data are kept byte for byte
    plain = b'{"type":"session"}\n{"type":"user/message","data":{"content":"hi"}}\n'
    assert extract_log(plain, FileMediaStore(tmp_path / "unused")) == plain


def test_the_viewer_shows_the_images(tmp_path: Path) -> None:
    from foldlog.interchange.exports.view.page import render

    with stored(tmp_path):
        pass
    page = render(Session.load(tmp_path / "s1.jsonl"), tmp_path)
    assert b64(SCREEN) in page.html and REF_PREFIX + sha256_of(SCREEN) not in page.html
    (tmp_path / "media" / sha256_of(SCREEN)).unlink()
    page = render(Session.load(tmp_path / "s1.jsonl"), tmp_path)
    assert REF_PREFIX + sha256_of(SCREEN) in page.html, (
        "a missing blob leaves its reference, the page renders"
    )
