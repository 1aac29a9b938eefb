"""A store of one's own whose writer implements only the `StoreWriter` protocol: `Session` reaches
it through the declared abilities of `StoreWriterBase` and their defaults (flush through
``append``, nothing to suspend, no file to read back, a torn tail refused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldlog import Session, StorageError
from foldlog.stores.base import SessionInfo, SessionStore, StoreWriter, StoreWriterBase, declared_writer
from foldlog.stores.file import FileStore, FileStoreWriter


class MemoryWriter:
    """The three required members, nothing else."""

    def __init__(self, store: MemoryStore, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        self.closed = False

    def read_log(self) -> bytes:
        self.store.reads += 1
        return self.store.logs[self.session_id]

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        self.store.appends.append((first_seq, count))
        self.store.logs[self.session_id] += lines

    def close(self) -> None:
        self.closed = True


class MemoryStore:
    def __init__(self) -> None:
        self.logs: dict[str, bytes] = {}
        self.appends: list[tuple[int, int]] = []
        self.reads = 0
        self.writers: list[MemoryWriter] = []

    def read_log(self, session_id: str) -> bytes:
        return self.logs[session_id]

    def open_writer(self, session_id: str, header_line: bytes) -> MemoryWriter:
        self.logs.setdefault(session_id, header_line + b"\n")
        writer = MemoryWriter(self, session_id)
        self.writers.append(writer)
        return writer

    def list_sessions(self) -> list[SessionInfo]:
        return []


def test_a_protocol_only_writer_gets_the_declared_defaults() -> None:
    store = MemoryStore()
    assert isinstance(store, SessionStore)
    raw = store.open_writer("w", b'{"type":"session","v":2,"id":"w","createdAt":1}')
    assert isinstance(raw, StoreWriter) and not isinstance(raw, StoreWriterBase)
    writer = declared_writer(raw)
    assert isinstance(writer, StoreWriterBase) and writer.path is None
    writer.suspend()  # the default: nothing to let go of
    with pytest.raises(StorageError, match="cannot cut"):
        writer.cut_tail(3, False)
    writer.close()
    assert raw.closed


def test_a_session_on_a_minimal_store_flushes_releases_and_reloads_through_the_defaults() -> None:
    store = MemoryStore()
    s = Session.open(store, "mem", system="sys")
    assert store.appends == [(0, 1)], "the system message flushed through append"
    s.add({"role": "user", "content": "hi"})
    s.add({"role": "assistant", "content": "hello"})
    s.flush()
    assert store.appends == [(0, 1), (1, 2)]
    s.flush()
    assert store.appends == [(0, 1), (1, 2)], "nothing pending: nothing appended"
    reads = store.reads
    s.release()
    assert s.released
    # no file to read back: the log comes from the writer's read_log
    assert [m["content"] for m in s.derive_messages()] == ["sys", "hi", "hello"]
    assert store.reads == reads + 1
    s.add({"role": "user", "content": "again"})
    s.close()
    assert store.writers[-1].closed
    loaded = Session.from_bytes(store.logs["mem"])
    assert [m["content"] for m in loaded.derive_messages()] == ["sys", "hi", "hello", "again"]


def test_a_torn_tail_in_a_store_that_cannot_cut_it_is_refused_and_the_lock_released() -> None:
    store = MemoryStore()
    Session.open(store, "torn", system="sys").close()
    store.logs["torn"] += b'{"type":"user/mess'
    with pytest.raises(StorageError, match="torn tail the store cannot cut"):
        Session.open(store, "torn")
    assert store.writers[-1].closed


def test_the_shipped_writers_declare_their_own(tmp_path: Path) -> None:
    writer = FileStore(tmp_path).open_writer("f", b'{"type":"session","v":2,"id":"f","createdAt":1}')
    try:
        assert isinstance(writer, FileStoreWriter) and declared_writer(writer) is writer
        assert writer.path == tmp_path / "f.jsonl"
        # the file writer's own: a cut, and a flush straight from the core
        assert FileStoreWriter.cut_tail is not StoreWriterBase.cut_tail
        assert FileStoreWriter.append_from is not StoreWriterBase.append_from
        assert FileStoreWriter.suspend is not StoreWriterBase.suspend
    finally:
        writer.close()
