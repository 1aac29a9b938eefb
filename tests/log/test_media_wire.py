"""Media stored once (issue 32, part 2), the request side: a session holding media references
builds its requests incrementally (the core's cached segments, the resolved form spliced into
the few messages that reference media), and forks read their parent's media."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session, _core
from foldlog.log.forks import fork_session
from foldlog.log.frozen import MessageSequence
from foldlog.log.media import REF_PREFIX, Resolver
from foldlog.log.media_wire import MediaCache
from foldlog.log.wire import chunked_body
from foldlog.providers.content import ContentScan
from foldlog.stores import FileStore
from foldlog.stores.media import MediaStore
from tests.log.test_media import PHOTO, SCREEN, CountingStore, data_url, fill, stored

STYLES = ("keep", "strip", "with-calls")
FRAME = {"model": "m", "stream": True}


def image_message(data: bytes, text: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": data_url("image/png", data)}},
        ],
    }


def talk(s: Session, steps: int) -> None:
    for i in range(steps):
        s.add({"role": "user", "content": f"question {i}"})
        s.add({"role": "assistant", "content": f"answer {i}", "reasoning_content": f"thought {i}"})


def request(s: Session) -> dict[str, bytes]:
    """What the agent does for a request, in each wire style: the body, and the scan of the
    messages' blocks (which reads the messages that hold blocks)."""
    out: dict[str, bytes] = {}
    for style in STYLES:
        wire = s.wire_request(style)
        ContentScan().index(wire.messages)
        out[style] = chunked_body(wire, FRAME).to_bytes()
    return out


class Spies:
    """Counts the messages a request resolves and encodes in Python, and the contents it reads
    from the media store."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, s: Session) -> None:
        self.resolved = self.encoded = 0
        assert s.media is not None
        self.store = CountingStore(s.media)
        s.media = self.store
        resolve = Resolver.resolve

        def counting_resolve(resolver: Resolver, value: Any) -> Any:
            self.resolved += isinstance(value, Mapping) and "role" in value  # a message, not a part
            return resolve(resolver, value)

        monkeypatch.setattr(Resolver, "resolve", counting_resolve)
        for name in ("styled_messages", "encode_request"):
            monkeypatch.setattr(_core, name, self.counting(getattr(_core, name)))

    def counting(self, encode: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any) -> Any:
            messages = next(a for a in args if isinstance(a, list))
            self.encoded += len(messages)
            return encode(*args)

        return counted

    def take(self) -> tuple[int, int, int]:
        out = (self.resolved, self.encoded, self.store.reads)
        self.resolved = self.encoded = self.store.reads = 0
        return out


def test_a_step_resolves_and_encodes_only_the_new_messages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inline = Session("sys", id="inline")
    fill(inline)
    talk(inline, 150)
    with stored(tmp_path) as s:
        talk(s, 150)
        spies = Spies(monkeypatch, s)
        assert request(s) == request(inline)
        resolved, encoded, reads = spies.take()
        assert resolved > 0 and encoded > 0 and reads > 0, "the first request resolves the media"
        assert encoded < 20, "the messages without media are the core's cached segments"
        for s_or_inline in (s, inline):
            s_or_inline.add({"role": "user", "content": "one more"})
        assert request(s) == request(inline)
        assert spies.take() == (0, 0, 0), "nothing earlier resolved, encoded or read again"
        # a new message with an image: only it is resolved (once) and written (once per style),
        # its content read from the cache (the photo was resolved before)
        for s_or_inline in (s, inline):
            s_or_inline.add(image_message(PHOTO, "and this"))
        assert request(s) == request(inline)
        assert spies.take() == (1, len(STYLES), 0)
        # the messages read back are the resolved ones, equal to the inline session's
        assert list(s.wire_messages()) == list(inline.wire_messages())
        assert REF_PREFIX.encode() not in b"".join(request(s).values())


def test_a_bounded_cache_keeps_the_bodies_right(tmp_path: Path, inline: Session) -> None:
    cache = MediaCache(max_bytes=1000)
    cache.put("a", "x" * 600, 600)
    cache.put("b", "y" * 300, 300)
    assert cache.get("a") is not None, "a is now the most recently used"
    cache.put("c", "z" * 300, 300)
    assert cache.get("b") is None and cache.get("a") is not None and cache.nbytes == 900
    cache.put("big", "w" * 2000, 2000)
    assert cache.get("big") is None and len(cache) == 2, "an entry past the bound is not kept"
    with stored(tmp_path) as s:
        s.media_cache = MediaCache(max_bytes=len(SCREEN))  # less than the session's media
        for _ in range(2):
            assert request(s) == request(inline)
        assert s.media_cache.nbytes <= len(SCREEN)


@pytest.fixture
def inline() -> Session:
    s = Session("sys", id="inline")
    fill(s)
    return s


def loaded(tmp_path: Path) -> Session:
    with stored(tmp_path):
        pass
    return Session.load(tmp_path / "s1.jsonl")


def resolved_urls(messages: Sequence[Any]) -> list[str]:
    return [
        b["image_url"]["url"]
        for m in messages
        if not isinstance(m["content"], str | None)
        for b in m["content"]
        if b["type"] == "image_url"
    ]


def test_an_in_memory_fork_of_a_loaded_session_reads_its_media(tmp_path: Path, inline: Session) -> None:
    parent = loaded(tmp_path)
    fork = fork_session(parent, at_seq=2)
    assert fork.media is parent.media and fork.path is None
    assert list(fork.wire_messages()) == list(inline.wire_messages()[:3])
    assert data_url("image/png", SCREEN) in resolved_urls(fork.wire_messages())
    for style in STYLES:
        body = chunked_body(fork.wire_request(style), FRAME).to_bytes()
        assert REF_PREFIX.encode() not in body
    # its own appends stay inline, in memory
    fork.add(image_message(PHOTO, "mine"))
    assert fork.wire_messages()[-1]["content"][1]["image_url"]["url"] == data_url("image/png", PHOTO)


def test_a_fork_copied_into_another_folder_gets_its_media(tmp_path: Path, inline: Session) -> None:
    parent = loaded(tmp_path / "a")
    (tmp_path / "b").mkdir()
    with fork_session(parent, at_seq=2, path=tmp_path / "b" / "f.jsonl") as fork:
        assert list(fork.wire_messages()) == list(inline.wire_messages()[:3])
    media: MediaStore | None = Session.load(tmp_path / "b" / "f.jsonl").media
    assert media is not None and len(media.hashes()) == 5, "the media the copy references"
    assert REF_PREFIX in (tmp_path / "b" / "f.jsonl").read_text(), "still references"


def test_a_fork_of_a_stored_session_in_the_same_store_shares_the_media(tmp_path: Path) -> None:
    with stored(tmp_path) as s, fork_session(s, at_seq=2) as fork:
        assert fork.media is not None
        assert data_url("image/png", SCREEN) in resolved_urls(fork.wire_messages())
    assert len(list((tmp_path / "media").iterdir())) == 5, "nothing stored twice"


def plain_blocks(text: str) -> dict[str, Any]:
    """A user message of blocks without media: a text and an image by URL."""
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
        ],
    }


def bodies(s: Session) -> dict[str, bytes]:
    return {style: chunked_body(s.wire_request(style), FRAME).to_bytes() for style in STYLES}


def test_requests_of_a_session_without_media_look_at_no_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a media reference in the log, a request reads none of its messages to look for
    one: each request looked at every message holding blocks, which made one more step
    O(history) (B2: two thirds of the step on a 113k-event session). Blocks whose text says
    "media", or escapes a character, are looked at once by the core, never by a request."""

    def scanned(self: MessageSequence) -> list[int]:
        raise AssertionError("a request looked at every message for media")

    monkeypatch.setattr(MessageSequence, "block_indexes", scanned)
    with Session.open(FileStore(tmp_path), "plain", system="sys") as s:
        talk(s, 20)
        s.add(plain_blocks("the media player, caf\u00e9"))
        s.add({"role": "user", "content": [{"type": "text", "text": 'say \\u0041 "media"'}]})
        first = bodies(s)
        s.add(plain_blocks("one more"))
        assert bodies(s) != first
        s.flush()
    again = Session.load(tmp_path / "plain.jsonl")
    assert b"media player" in bodies(again)["keep"]


def test_media_added_after_requests_without_any_is_resolved(tmp_path: Path) -> None:
    """The core answers "no media" from the events it has looked at; the events appended after
    are looked at by the next request, so a reference added later is resolved."""
    plain = Session("sys", id="plain-inline")
    with Session.open(FileStore(tmp_path), "late", system="sys") as s:
        for t in (s, plain):
            talk(t, 3)
        assert bodies(s) == bodies(plain)
        for t in (s, plain):
            t.add(image_message(PHOTO, "now an image"))
        assert s.media is not None and REF_PREFIX.encode() in s._core.to_bytes(), "stored as a reference"
        got = bodies(s)
        assert got == bodies(plain)
        assert all(REF_PREFIX.encode() not in body for body in got.values())


def test_the_core_says_which_messages_reference_media(tmp_path: Path) -> None:
    """`media_indexes`, the core's one rule for a message that references media (a block with
    a ``media`` key): derived messages asked from their events, and the messages the send plan
    made (the attachments a tool message cannot carry); never blocks that only say "media"."""
    with stored(tmp_path) as s:
        s.add(plain_blocks("media, caf\u00e9, in words only"))
        for style in STYLES:
            messages = s.wire_request(style).messages
            assert isinstance(messages, MessageSequence)
            raw = [messages._items.item(i) for i in range(messages._start, len(messages._items))]
            expected = [
                i
                for i, m in enumerate(raw)
                if isinstance(m["content"], Sequence)
                and not isinstance(m["content"], str)
                and any("media" in b for b in m["content"])
            ]
            assert messages.media_indexes() == expected, style
            kinds = [(raw[i]["role"], "Attachments" in json.dumps(raw[i])) for i in expected]
            assert ("user", True) in kinds and ("user", False) in kinds, "moved and derived"
            assert json.dumps(raw[-1]).count("media") == 1, "the plain blocks are not flagged"
            assert len(raw) - 1 not in expected
        held = s.wire_request("keep").messages
        assert isinstance(held, MessageSequence)
        before = held.media_indexes()
        s.add(image_message(SCREEN, "one more image"))
        messages = s.wire_request("keep").messages
        assert isinstance(messages, MessageSequence)
        assert messages.media_indexes() == [*before, len(messages) - 1], "found as it is appended"
        tail = messages[1:]
        assert isinstance(tail, MessageSequence)
        assert tail.media_indexes() == [i - 1 for i in messages.media_indexes()]
