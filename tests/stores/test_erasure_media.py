"""Erasing an event erases the media bytes it referenced (docs/log-format.md, "Erasure";
docs/retention.md): searched for — raw and as base64 — in every file under the store's folder, and
in every row and the table files of PostgreSQL; kept while another event still references them."""

from __future__ import annotations

import base64
import os
import struct
from pathlib import Path
from typing import Any

import psycopg
import pytest

from foldlog import Session
from foldlog.stores.media import media_store_for, sha256_of
from tests.stores.conftest import make_store
from tests.stores.test_erasure_stores import _relation_files


def _image_bytes() -> bytes:
    """A PNG's header and random bytes: no other stored byte can match a piece of it."""
    return b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" + struct.pack(">II", 32, 24) + os.urandom(3000)


def _pieces(data: bytes) -> list[bytes]:
    """Pieces of the bytes and of their base64 (a store may split a value, as TOAST does)."""
    encoded = base64.b64encode(data)
    return [data[k : k + 48] for k in range(24, len(data) - 48, 400)] + [
        encoded[k : k + 64] for k in range(40, len(encoded) - 64, 500)
    ]


def _message(data: bytes, text: str = "see") -> dict[str, Any]:
    url = "data:image/png;base64," + base64.b64encode(data).decode()
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}],
    }


def _found(spec: dict[str, Any], data: bytes) -> list[str]:
    """Where the store holds a piece of ``data``: files under the file store's folder; for
    PostgreSQL every row of its tables, then the table files after VACUUM FULL."""
    pieces = _pieces(data)
    if spec["kind"] == "file":
        root = Path(spec["root"])
        files = [p for p in root.rglob("*") if p.is_file()]
        assert files
        return [str(p) for p in files if any(x in p.read_bytes() for x in pieces)]
    where: list[str] = []
    with psycopg.connect(spec["dsn"], autocommit=True) as conn:
        for piece in pieces:
            (rows,) = conn.execute(
                "SELECT count(*) FROM foldlog.media WHERE position(%s::bytea IN data) > 0", (piece,)
            ).fetchone() or (0,)
            if rows:
                where.append("foldlog.media rows")
        for table in ("foldlog.events", "foldlog.sessions", "foldlog.media", "foldlog.checkpoints"):
            for piece in pieces[len(pieces) // 2 :]:  # the base64 pieces: text a row's text holds
                (rows,) = conn.execute(
                    f"SELECT count(*) FROM {table} AS t WHERE t::text LIKE %s", (f"%{piece.decode()}%",)
                ).fetchone() or (0,)
                if rows:
                    where.append(f"{table} rows")
        for table in ("foldlog.events", "foldlog.sessions", "foldlog.media", "foldlog.checkpoints"):
            conn.execute(f"VACUUM FULL {table}")
        conn.execute("CHECKPOINT")
        files = _relation_files(conn)
    assert len(files) >= 6
    where += [str(f) for f in files if any(x in f.read_bytes() for x in pieces)]
    return where


@pytest.fixture
def spec(store_spec: dict[str, Any]) -> dict[str, Any]:
    if store_spec["kind"] == "postgres":
        with psycopg.connect(store_spec["dsn"], autocommit=True) as conn:
            conn.execute("TRUNCATE foldlog.media")
    return store_spec


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if close is not None:
        close()


def test_erasing_the_event_removes_its_image_from_the_store(spec: dict[str, Any]) -> None:
    store = make_store(spec)
    image, other = _image_bytes(), _image_bytes()
    try:
        s = Session.open(store, "s1", system="sys")
        s.add(_message(image))
        s.add({"role": "assistant", "content": "a cat"})
        s.add(_message(other, "and this"))
        s.flush()
        assert _found(spec, image), "stored before the erasure"
        done = s.erase([1], "erasure request 12")
        assert done.media_removed == 1
        media = media_store_for(store)
        assert media is not None and media.hashes() == {sha256_of(other)}  # only the candidate went
        # the session goes on, its other image still sent
        body = s.wire_request("keep")
        assert base64.b64encode(other).decode() in str(body)
        s.close()
    finally:
        _close(store)
    assert _found(spec, image) == []
    assert _found(spec, other) != []


def test_an_image_another_event_references_is_kept(spec: dict[str, Any]) -> None:
    store = make_store(spec)
    shared, own = _image_bytes(), _image_bytes()
    try:
        with Session.open(store, "other", system="sys") as o:
            o.add(_message(shared))
        s = Session.open(store, "s1", system="sys")
        s.add(_message(shared))
        s.add(_message(own, "twice"))
        s.add(_message(own, "again"))
        s.flush()
        done = s.erase([1, 2], "request")
        # the shared image: another session's; the own one: the session's event #3
        assert done.media_removed == 0
        s.close()
        with Session.open(store, "other") as o:
            assert base64.b64encode(shared).decode() in str(o.wire_request("keep"))
        with Session.open(store, "s1") as again:
            again.erase([3], "request")
            assert again.events[-1]["type"] == "log/erasure"
    finally:
        _close(store)
    assert _found(spec, shared) != []
    assert _found(spec, own) == []


def test_an_image_stored_again_while_erasing_is_kept(spec: dict[str, Any]) -> None:
    """Another writer stored the same bytes after the erasure began (it will reference them):
    they stay, for retention to judge later."""
    store = make_store(spec)
    image = _image_bytes()
    sha = sha256_of(image)
    try:
        s = Session.open(store, "s1", system="sys")
        s.add(_message(image))
        s.flush()
        later = 3600.0  # "touched" an hour from now: certainly after the erasure began
        if spec["kind"] == "file":
            path = Path(spec["root"]) / "media" / sha
            stamp = path.stat().st_mtime + later
            os.utime(path, (stamp, stamp))
        else:
            with psycopg.connect(spec["dsn"], autocommit=True) as conn:
                conn.execute(
                    "UPDATE foldlog.media SET touched = touched + %s WHERE sha256 = %s",
                    (int(later * 1000), sha),
                )
        done = s.erase([1], "request")
        assert done.media_removed == 0
        s.close()
        media = media_store_for(store)
        assert media is not None and media.get(sha) == image
    finally:
        _close(store)


def test_a_blob_an_event_stored_meanwhile_references_is_put_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An event referencing the blob stored between the scan and the removal: the scan after the
    removal finds it and the bytes go back in place."""
    from foldlog.stores import media_erase
    from foldlog.stores.media import FileMediaStore

    media = FileMediaStore(tmp_path / "media")
    image = _image_bytes()
    sha = media.put(image)
    scans = iter([set(), {sha}])
    monkeypatch.setattr(media_erase, "_referenced", lambda folder: next(scans))
    since = (tmp_path / "media" / sha).stat().st_mtime
    assert media_erase.remove_from_folder(tmp_path, {sha}, since) == 0
    assert media.get(sha) == image
    assert sorted(p.name for p in (tmp_path / "media").iterdir()) == [sha]  # nothing held aside
