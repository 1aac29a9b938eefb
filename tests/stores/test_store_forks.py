"""Forks in each store: a file fork refers to its parent's log, a PostgreSQL fork holds a copy.
Real PostgreSQL server (tests/stores/conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg

from foldlog import Session
from foldlog.log.forks import fork_session
from foldlog.stores.file import FileStore
from foldlog.stores.postgres import PostgresStore


def _history(session: Session) -> list[str]:
    return [str(m["content"]) for m in session.derive_messages()]


def test_a_postgres_fork_copies_the_history_and_lists_under_its_parent(pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE foldlog.checkpoints, foldlog.events, foldlog.sessions")
    with PostgresStore(pg_dsn) as store:
        parent = Session.open(store, "pg-parent", system="sys")
        parent.add({"role": "user", "content": "q"})
        parent.add({"role": "assistant", "content": "a"})
        fork = fork_session(parent, at_seq=1)
        assert fork.writable and fork.path is None
        assert dict(fork.parent or {}) == {"kind": "fork", "id": "pg-parent", "atSeq": 1}
        fork.add({"role": "assistant", "content": "other a"})
        fork.close()
        parent.add({"role": "user", "content": "q2"})
        parent.close()
        again = Session.from_bytes(store.read_log(fork.id))
        assert _history(again) == ["sys", "q", "other a"]
        assert b'"content":"a"' not in store.read_log(fork.id)  # the copy ends at the fork point
        rows = {info.id: info for info in store.list_sessions()}
        assert rows[fork.id].parent == "pg-parent" and rows[fork.id].parent_kind == "fork"
        assert rows["pg-parent"].parent is None


def test_file_store_listing_names_parents_and_a_fresh_fork_continues_its_parents_seqs(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    parent = Session.open(store, "p", system="sys")
    parent.add({"role": "user", "content": "q"})
    fork: Any = fork_session(parent)
    parent.close()
    fork.close()
    rows = {info.id: info for info in store.list_sessions()}
    assert (rows[fork.id].parent, rows[fork.id].parent_kind) == ("p", "fork")
    assert rows[fork.id].last_seq == 1  # nothing of its own yet: the parent's last seq it starts from
    writer = store.open_writer(fork.id, b'{"type":"session"}')
    try:
        line = (
            b'{"type":"user/message","seq":2,"time":1,'
            b'"data":{"role":"user","content":"x"},"surfaceOp":"append"}\n'
        )
        writer.append(line, 2, 1)
    finally:
        writer.close()
    assert _history(Session.load(tmp_path / f"{fork.id}.jsonl")) == ["sys", "q", "x"]
