"""The media stores (files and PostgreSQL) behind one protocol, and sessions of both session
stores keeping their media there: stored once, read back on request, removed when unreferenced."""

from __future__ import annotations

import base64
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from foldlog import Session
from foldlog.errors import MissingMediaError, StorageError
from foldlog.log.media import REF_PREFIX
from foldlog.stores.media import FileMediaStore, MediaStore, media_store_for, referenced_hashes, sha256_of
from foldlog.stores.retention import remove_unreferenced_media
from tests.stores.conftest import make_store


def _clear_media(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE foldlog.media")


@pytest.fixture(params=["file", "postgres"])
def media(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MediaStore]:
    if request.param == "file":
        yield FileMediaStore(tmp_path / "media")
        return
    from foldlog.stores.postgres import PostgresStore

    dsn = request.getfixturevalue("pg_dsn")
    _clear_media(dsn)
    with PostgresStore(dsn) as store:
        yield store.media()


def test_the_protocol_is_met(media: MediaStore) -> None:
    assert isinstance(media, MediaStore)


def test_content_is_stored_once_and_read_back(media: MediaStore) -> None:
    data = b"\x00\x01 media bytes \xff" * 100
    sha = media.put(data)
    assert sha == sha256_of(data)
    assert media.put(data) == sha
    assert media.hashes() == {sha}
    assert media.get(sha) == data
    assert media.put(b"") == sha256_of(b"") and media.get(sha256_of(b"")) == b""


def test_missing_content_is_a_clear_error(media: MediaStore) -> None:
    sha = sha256_of(b"never stored")
    with pytest.raises(MissingMediaError) as err:
        media.get(sha)
    assert err.value.sha256 == sha and sha in str(err.value)
    assert isinstance(err.value, StorageError)


def test_unreferenced_content_goes_after_its_grace(media: MediaStore) -> None:
    keep, drop = media.put(b"kept"), media.put(b"dropped")
    assert media.remove_unreferenced({keep}) == 0, "just stored: within the grace"
    time.sleep(0.05)
    assert media.remove_unreferenced({keep}, grace=0.01) == 1
    assert media.hashes() == {keep}
    with pytest.raises(MissingMediaError):
        media.get(drop)
    # storing it again brings it back (and marks it as in use now)
    assert media.put(b"dropped") == drop and media.get(drop) == b"dropped"


def test_a_file_changed_on_disk_is_refused(tmp_path: Path) -> None:
    media = FileMediaStore(tmp_path / "media")
    sha = media.put(b"original")
    (tmp_path / "media" / sha).write_bytes(b"tampered")
    with pytest.raises(StorageError, match="does not hold the bytes"):
        media.get(sha)


def _screenshot(width: int, height: int) -> bytes:
    return b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" + struct.pack(">II", width, height) + bytes(2000)


def _image(data: bytes) -> dict[str, Any]:
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    return {
        "role": "user",
        "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": url}}],
    }


def test_sessions_of_a_store_share_its_media(store_spec: dict[str, Any]) -> None:
    if store_spec["kind"] == "postgres":
        _clear_media(store_spec["dsn"])
    store = make_store(store_spec)
    try:
        shot = _screenshot(1280, 800)
        inline = Session()
        inline.add(_image(shot))
        for sid in ("one", "two"):
            with Session.open(store, sid) as s:
                s.add(_image(shot))
                s.add(_image(shot))
                assert s.token_count() == Session.from_bytes(s.to_bytes()).token_count()
        media = media_store_for(store)
        assert media is not None and media.hashes() == {sha256_of(shot)}
        for sid in ("one", "two"):
            stored = store.read_log(sid)
            assert base64.b64encode(shot) not in stored and REF_PREFIX.encode() in stored
        if store_spec["kind"] == "postgres":
            with psycopg.connect(store_spec["dsn"]) as conn:
                rows = conn.execute("SELECT count(*), sum(size) FROM foldlog.media").fetchone()
                hits = conn.execute(
                    "SELECT count(*) FROM foldlog.events WHERE strpos(line, %s) > 0",
                    (base64.b64encode(shot).decode()[:200],),
                ).fetchone()
            assert rows == (1, len(shot)) and hits == (0,)
        with Session.open(store, "one") as again:
            assert again.wire_messages()[0] == inline.wire_messages()[0]
            assert again.token_count() == Session.from_bytes(again.to_bytes()).token_count()
        for sid in ("one", "two"):
            assert referenced_hashes(store.read_log(sid)) == {sha256_of(shot)}
        assert remove_unreferenced_media(store) == 0, "referenced by both"
        assert media.remove_unreferenced({sha256_of(shot)}, grace=0) == 0
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


def test_a_missing_row_names_hash_and_session(pg_dsn: str) -> None:
    from foldlog.stores.postgres import PostgresStore

    _clear_media(pg_dsn)
    shot = _screenshot(10, 10)
    with PostgresStore(pg_dsn) as store:
        with Session.open(store, "lost-media") as s:
            s.add(_image(shot))
        _clear_media(pg_dsn)
        with Session.open(store, "lost-media") as s:
            assert s.events[0]["data"]["content"][1]["media"]["width"] == 10
            assert s.token_count() == Session.from_bytes(s.to_bytes()).token_count()
            with pytest.raises(MissingMediaError) as err:
                s.wire_messages()
    assert err.value.session == "lost-media" and err.value.sha256 == sha256_of(shot)
    assert "lost-media" in str(err.value) and sha256_of(shot) in str(err.value)


def test_a_store_of_another_kind_keeps_media_inline() -> None:
    assert media_store_for(object()) is None
    assert isinstance(media_store_for(None, Path("/x/y.jsonl")), FileMediaStore)
    assert media_store_for(None) is None
