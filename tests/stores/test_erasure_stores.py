"""Erasure in the real stores (docs/log-format.md, "Erasure"): the erased bytes are gone from the
session file and from the PostgreSQL tables — searched for in the stored bytes themselves — and the
session goes on."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from foldlog import Session
from foldlog.errors import SessionLockedError, StorageError
from foldlog.log.erasure import ERASED
from foldlog.stores.file import FileStore
from foldlog.stores.postgres import PostgresStore
from tests.stores.conftest import make_store

SECRET = "SECRET-c0ffee-erase-me-5150"


def secret_session(store: Any, sid: str = "s1") -> Session:
    """A session whose first user message (the listings' preview), reply and tool result hold the
    secret, flushed to ``store``."""
    s = Session.open(store, sid, system="sys")
    s.add({"role": "user", "content": f"my number is {SECRET}"})
    s.add(
        {
            "role": "assistant",
            "content": f"saving {SECRET}",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "save", "arguments": f'{{"v":"{SECRET}"}}'},
                }
            ],
        }
    )
    s.add({"role": "tool", "tool_call_id": "c1", "name": "save", "content": f"saved {SECRET}"})
    s.add({"role": "user", "content": "thanks"})
    s.flush()
    return s


def test_each_store_holds_the_erasure_and_the_session_goes_on(store: Any) -> None:
    s = secret_session(store)
    assert SECRET.encode() in store.read_log("s1")
    done = s.erase([1, 2, 3], "erasure request 7")
    s.add({"role": "assistant", "content": "you are welcome"})
    s.close()
    data = store.read_log("s1")
    assert SECRET.encode() not in data
    again = Session.open(store, "s1")
    assert not again.normalized_dirty
    assert [m["content"] for m in again.derive_messages()] == [
        "sys",
        ERASED,
        ERASED,
        ERASED,
        "thanks",
        "you are welcome",
    ]
    assert again.events[done.seq]["data"]["reason"] == "erasure request 7"
    again.close()
    (info,) = store.list_sessions()
    assert (info.last_seq, info.size) == (6, len(data))
    assert info.preview is not None and SECRET not in info.preview


def test_erasure_holds_the_writer_lock(store_spec: dict[str, Any]) -> None:
    store = make_store(store_spec)
    s = secret_session(store)
    s.erase([1], "request")
    other = make_store(store_spec)
    with pytest.raises(SessionLockedError):
        Session.open(other, "s1")
    s.close()
    for st in (store, other):
        close = getattr(st, "close", None)
        if close is not None:
            close()


# --- the file store ------------------------------------------------------------------------------


def test_the_file_is_replaced_atomically_and_keeps_its_mode(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    s = secret_session(store)
    path = store.path_for("s1")
    inode = path.stat().st_ino
    s.erase([1, 2, 3], "request")
    assert path.stat().st_ino != inode  # a new file renamed into place, not an edit in place
    assert oct(path.stat().st_mode & 0o777) == oct(0o600)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s1.jsonl", "s1.lock"]  # no temp file left
    # the writer goes on with the new file: its check that the file is what it left holds
    s.add({"role": "user", "content": "after"})
    s.flush()
    s.close()
    raw = path.read_bytes()
    assert SECRET.encode() not in raw
    assert [m["content"] for m in Session.load(path).derive_messages()][-1] == "after"


def test_a_file_changed_under_the_writer_is_not_rewritten(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    s = secret_session(store)
    path = store.path_for("s1")
    with open(path, "ab") as f:
        f.write(
            b'{"type":"user/message","seq":5,"time":1,"data":{"role":"user","content":"x"},"surfaceOp":"append"}\n'
        )
    before = path.read_bytes()
    with pytest.raises(
        StorageError, match="the file ends at event #5, the erasure expected #4: nothing was erased"
    ):
        s.erase([1], "request")
    assert path.read_bytes() == before
    s.close()


# --- PostgreSQL ----------------------------------------------------------------------------------


def _relation_files(conn: psycopg.Connection[Any]) -> list[Path]:
    """The files of every table, TOAST table and index of the foldlog schema."""
    (data_dir,) = conn.execute("SHOW data_directory").fetchone() or ("",)
    rows = conn.execute(
        "SELECT pg_relation_filepath(c.oid) FROM pg_class AS c"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
        " WHERE n.nspname = 'foldlog' AND c.relkind IN ('r', 'i', 't')"
        " UNION SELECT pg_relation_filepath(t.oid) FROM pg_class AS c"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace JOIN pg_class AS t ON t.oid = c.reltoastrelid"
        " WHERE n.nspname = 'foldlog'"
        " UNION SELECT pg_relation_filepath(i.indexrelid) FROM pg_class AS c"
        " JOIN pg_namespace AS n ON n.oid = c.relnamespace JOIN pg_index AS i ON i.indrelid = c.reltoastrelid"
        " WHERE n.nspname = 'foldlog'"
    ).fetchall()
    files = []
    for (rel,) in rows:
        if rel is None:
            continue
        base = Path(data_dir) / rel
        files += [
            p
            for p in base.parent.glob(base.name + "*")
            if p.name == base.name or p.name.startswith(base.name + ".")
        ]
    return files


def test_postgres_rows_columns_and_table_files_hold_no_erased_bytes(
    pstore: PostgresStore, pg_dsn: str
) -> None:
    s = secret_session(pstore)
    # a long line too, stored out of line (TOAST) by the server
    s.add({"role": "user", "content": os.urandom(6000).hex() + SECRET})
    s.flush()
    try:
        s.erase([1, 2, 3, 5], "request")
    finally:
        s.close()
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        # every column of every row (a row's text holds its TOASTed values), and what the
        # indexes can return: no live row version holds the secret
        for table in ("foldlog.events", "foldlog.sessions"):
            (hits,) = conn.execute(
                f"SELECT count(*) FROM {table} AS t WHERE t::text LIKE %s", (f"%{SECRET}%",)
            ).fetchone() or (None,)
            assert hits == 0, table
        # the server does not zero the space a vacuum frees in a page: the table files are
        # rewritten by the operator's VACUUM FULL (docs/retention.md), after which no byte is left
        conn.execute("VACUUM FULL foldlog.events")
        conn.execute("VACUUM FULL foldlog.sessions")
        conn.execute("CHECKPOINT")
        files = _relation_files(conn)
    assert len(files) >= 4
    for f in files:
        assert SECRET.encode() not in f.read_bytes(), f


def test_postgres_erasure_is_one_transaction(pstore: PostgresStore, pg_dsn: str) -> None:
    s = secret_session(pstore)
    writer = s._writer
    assert writer is not None
    before = pstore.read_log("s1")
    # a tombstone for an event that is stored, then one that is not: nothing of it may stay
    with pytest.raises(StorageError, match="no stored event #40"):
        writer.erase({1: b'{"type":"user/message","seq":1}', 40: b"{}"}, b"{}\n", 5)
    assert pstore.read_log("s1") == before
    # an erasure planned on a log that has moved on since is refused by the append's check
    with pytest.raises(StorageError, match="ends at seq 4"):
        writer.erase({1: b'{"type":"user/message","seq":1}'}, b'{"type":"log/erasure","seq":9}\n', 9)
    assert pstore.read_log("s1") == before
    s.close()


def test_a_store_that_only_appends_refuses_to_erase_and_nothing_changes() -> None:
    from tests.stores.test_writer_defaults import MemoryStore

    store = MemoryStore()
    s = Session.open(store, "m", system="sys")
    s.add({"role": "user", "content": SECRET})
    s.flush()
    before = store.logs["m"]
    with pytest.raises(StorageError, match="cannot erase events: it only appends"):
        s.erase([1], "request")
    assert store.logs["m"] == before
    assert s.derive_messages()[1]["content"] == SECRET  # the session goes on with the stored log
    s.close()
