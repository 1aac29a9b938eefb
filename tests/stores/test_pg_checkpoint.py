"""Checkpoints in the PostgreSQL store (issue 32, part 4 with the real store): a released session
opens from the checkpoint row and the rows stored after it, never reading every row; what it
derives, counts, plans and sends is what a whole load gives; reading the whole log reads the
rest of its rows; a checkpoint that does not match its rows is ignored with a warning; an
erasure and a deletion take it away. Real server (the project's test cluster)."""

from __future__ import annotations

import warnings
from typing import Any

import psycopg
import pytest

from foldlog import Session
from foldlog.errors import CheckpointIgnoredWarning, StorageError
from foldlog.log import checkpoint
from foldlog.log.checkpoint import is_partial
from foldlog.stores.postgres import PostgresStore, PostgresWriter
from tests.log.checkpoint_helpers import add_turns, assert_same_ready_state

SID = "ckpt-pg"


@pytest.fixture(autouse=True)
def _checkpoint_small_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """These logs are small: checkpoint them anyway."""
    monkeypatch.setattr(checkpoint, "MIN_EVENTS", 1)


def _released(store: PostgresStore, turns: int = 30) -> None:
    s = Session.open(store, SID, system="be brief")
    add_turns(s, 0, turns)
    s.release()
    s.close()


def _full(store: PostgresStore) -> Session:
    return Session.from_bytes(store.read_log(SID), source=SID)


def _rows(dsn: str, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute(sql, args).fetchall()


def _no_whole_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: PostgresWriter) -> bytes:
        raise AssertionError("the whole log was read")

    monkeypatch.setattr(PostgresWriter, "read_log", refuse)


def test_release_stores_a_checkpoint_and_open_reads_only_the_rows_after_it(
    pstore: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _released(pstore)
    [(events,)] = _rows(pstore.dsn, "SELECT events FROM foldlog.checkpoints WHERE session_id = %s", SID)
    full = _full(pstore)
    assert events == len(full)
    with monkeypatch.context() as m:
        _no_whole_reads(m)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            s = Session.open(pstore, SID)
        assert is_partial(s._core)
        assert_same_ready_state(s, full)
        add_turns(s, 30, 2)  # appending reads no more either
        s.flush()
        assert is_partial(s._core)
    s.close()
    again = _full(pstore)
    assert again.derive_messages()[-1]["content"] == "answer 31"
    with Session.open(pstore, SID) as back:  # the checkpoint, then the 8 rows after it
        assert is_partial(back._core)
        assert_same_ready_state(back, again)


def test_reading_the_whole_log_reads_the_rest_of_its_rows(pstore: PostgresStore) -> None:
    _released(pstore)
    s = Session.open(pstore, SID)
    add_turns(s, 30, 1)
    assert is_partial(s._core)
    full_before = _full(pstore)
    events = list(s.events)  # completes: the checkpoint's rows read from the store
    assert not is_partial(s._core)
    assert events[: len(full_before)] == list(full_before.events)
    s.flush()
    assert s.to_bytes() == pstore.read_log(SID)
    s.close()


def test_release_and_reuse_goes_through_the_checkpoint(
    pstore: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    s = Session.open(pstore, SID, system="be brief")
    add_turns(s, 0, 10)
    s.release()
    with monkeypatch.context() as m:
        _no_whole_reads(m)
        add_turns(s, 10, 2)  # the reload reads the checkpoint row and the rows after it
        assert is_partial(s._core)
        s.flush()
    assert_same_ready_state(s, _full(pstore))
    s.close()


def test_a_compaction_stores_a_checkpoint_at_the_next_flush(pstore: PostgresStore) -> None:
    s = Session.open(pstore, SID, system="be brief")
    add_turns(s, 0, 4)
    s.flush()
    count = "SELECT count(*) FROM foldlog.checkpoints WHERE session_id = %s"
    assert _rows(pstore.dsn, count, SID) == [(0,)]
    s.append_event("compaction/start", {"id": 1})
    s.append_event("compaction/end", {"id": 1})
    s.flush()
    assert _rows(pstore.dsn, count, SID) == [(1,)]
    s.close()


def _edit_row(dsn: str, seq: int, old: str, new: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(
            "UPDATE foldlog.events SET line = replace(line, %s, %s)"
            " WHERE session_id = %s AND seq = %s AND strpos(line, %s) > 0",
            (old, new, SID, seq, old),
        )
        assert cur.rowcount == 1


def test_rows_that_differ_from_the_checkpoint_load_whole_with_a_warning(pstore: PostgresStore) -> None:
    _released(pstore)
    last = len(_full(pstore)) - 1
    _edit_row(pstore.dsn, last, "answer 29", "ANSWER 29")
    with pytest.warns(CheckpointIgnoredWarning, match="differ from those the checkpoint covers"):
        s = Session.open(pstore, SID)
    assert not is_partial(s._core)
    assert s.derive_messages()[-1]["content"] == "ANSWER 29"
    s.close()


def test_an_earlier_row_edited_by_hand_fails_the_completion(pstore: PostgresStore) -> None:
    """The check at open is the last covered row; a row edited before it is found when the log
    is completed, which compares what it holds with the rows as read."""
    _released(pstore)
    seq = next(e["seq"] for e in _full(pstore).events if e["data"].get("content") == "question 0")
    _edit_row(pstore.dsn, seq, "question 0", "QUESTION 0")
    s = Session.open(pstore, SID)
    assert is_partial(s._core)
    with pytest.raises(StorageError, match="changed in its store since its checkpoint was read"):
        list(s.events)
    assert is_partial(s._core)
    s.close()


@pytest.mark.parametrize("damage", ["corrupt", "other version", "a file's checkpoint"])
def test_a_damaged_checkpoint_row_is_ignored_with_a_warning(pstore: PostgresStore, damage: str) -> None:
    _released(pstore)
    [(data,)] = _rows(pstore.dsn, "SELECT data FROM foldlog.checkpoints WHERE session_id = %s", SID)
    data = bytes(data)
    if damage == "corrupt":
        data = data[:-10] + b"X" + data[-9:]
    elif damage == "other version":
        data = data.replace(b'"checkpoint":1', b'"checkpoint":99', 1)
    else:
        data = data.replace(b',"store":"rows"', b"", 1)
    with psycopg.connect(pstore.dsn, autocommit=True) as conn:
        conn.execute("UPDATE foldlog.checkpoints SET data = %s WHERE session_id = %s", (data, SID))
    with pytest.warns(CheckpointIgnoredWarning, match="loading the whole log"):
        s = Session.open(pstore, SID)
    assert not is_partial(s._core)
    assert_same_ready_state(s, _full(pstore))
    s.close()


def test_an_erasure_and_a_deletion_take_the_checkpoint_away(pstore: PostgresStore) -> None:
    _released(pstore)
    s = Session.open(pstore, SID)
    seq = next(e["seq"] for e in s.events if e["data"].get("content") == "question 3")
    s.erase([seq], reason="asked")
    found = _rows(
        pstore.dsn,
        "SELECT count(*) FROM foldlog.checkpoints WHERE position('question 3'::bytea IN data) > 0",
    )
    assert found == [(0,)], "the checkpoint held the erased text"
    s.release()  # a new checkpoint, of the erased log
    s.close()
    with Session.open(pstore, SID) as back:
        assert is_partial(back._core)
        assert "question 3" not in [m["content"] for m in back.derive_messages()]
    pstore.delete_session(SID)
    assert _rows(pstore.dsn, "SELECT count(*) FROM foldlog.checkpoints") == [(0,)]
