"""The SessionStore contract (foldlog/stores/base.py), run against every store implementation."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path
from typing import Any

import pytest

from foldlog.errors import InvalidEventError, SessionLockedError, StorageError
from foldlog.stores.base import SessionInfo, SessionStore, StoreWriter, StoreWriterBase, declared_writer
from tests.stores.store_helpers import read_message, start_worker
from tests.stores.store_logdata import header, header_line, line, load_with_reader, parse_log, step_batch


def _info(store: Any, session_id: str) -> SessionInfo:
    found = [s for s in store.list_sessions() if s.id == session_id]
    assert len(found) == 1, f"list_sessions should hold {session_id} once: {found}"
    info: SessionInfo = found[0]
    return info


def test_store_and_writer_satisfy_the_protocols(store: Any) -> None:
    assert isinstance(store, SessionStore)
    writer = store.open_writer("p", header_line("p"))
    try:
        assert isinstance(writer, StoreWriter)
    finally:
        writer.close()


def test_the_writer_declares_its_abilities(store: Any) -> None:
    # what `Session` reaches the store through: the shipped writers declare their own
    writer = store.open_writer("d", header_line("d"))
    try:
        assert isinstance(writer, StoreWriterBase) and declared_writer(writer) is writer
        # a file writer names its file (a released session reads it back); a database, none
        assert writer.path is None or writer.path.read_bytes() == writer.read_log()
    finally:
        writer.close()


def test_new_session_holds_only_its_header(store: Any) -> None:
    head = header("s-new")
    with_writer = store.open_writer("s-new", head[:-1])
    try:
        assert with_writer.read_log() == head
        assert store.read_log("s-new") == head
    finally:
        with_writer.close()


def test_a_new_session_is_listed_empty(
    store: Any, store_spec: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    head = header("s-new")
    store.open_writer("s-new", head[:-1]).close()
    info = _info(store, "s-new")
    assert (info.last_seq, info.size, info.turns) == (-1, len(head), 0)


def test_batches_round_trip_byte_for_byte(store: Any) -> None:
    head = header("s-bytes")
    writer = store.open_writer("s-bytes", head[:-1])
    tricky = {
        "type": "tool/result",
        "seq": 0,
        "time": 1,
        "data": {
            "turn": 1,
            "step": 1,
            "message": {
                "role": "tool",
                "toolCallId": "c",
                "toolName": "cat",
                # NUL, escapes, quotes, non-ASCII, astral plane, a literal backslash-u sequence
                "content": 'nul:\u0000 tab:\t nl:\n q:" bs:\\ lit:\\u0000 é 你好 🦀',
                "isError": False,
            },
        },
        "surfaceOp": "append",
    }
    big = {"type": "tool/result", "seq": 1, "time": 2, "data": {"blob": "x" * (3 << 20)}}
    batch1 = line(tricky) + line(big)
    batch2, n2 = step_batch(2, 0, 3, "a")
    try:
        writer.append(batch1, 0, 2)
        writer.append(batch2, 2, n2)
        expected = head + batch1 + batch2
        assert store.read_log("s-bytes") == expected
    finally:
        writer.close()
    assert store.read_log("s-bytes") == expected


def test_the_writer_reads_what_is_stored_now(
    store: Any, store_spec: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    head = header("s-reread")
    batch, n = step_batch(0, 0, 2, "a")
    with_writer = store.open_writer("s-reread", head[:-1])
    try:
        with_writer.append(batch, 0, n)
        assert with_writer.read_log() == head + batch
    finally:
        with_writer.close()


def test_list_sessions_counts_events_and_bytes(
    store: Any, store_spec: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    writer = store.open_writer("s-count", header_line("s-count"))
    b0, n0 = step_batch(0, 0, 3, "a")
    b1, n1 = step_batch(n0, 1, 3, "a")
    try:
        writer.append(b0, 0, n0)
        writer.append(b1, n0, n1)
    finally:
        writer.close()
    info = _info(store, "s-count")
    assert info.last_seq == n0 + n1 - 1
    assert info.size == len(store.read_log("s-count"))


def test_a_batch_must_continue_the_stored_log(
    store: Any, store_spec: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    head = header("s-seq")
    writer = store.open_writer("s-seq", head[:-1])
    try:
        b0, n0 = step_batch(0, 0, 3, "a")
        writer.append(b0, 0, n0)
        b1, n1 = step_batch(n0, 1, 3, "a")
        with pytest.raises(StorageError):
            writer.append(b1, n0 + 1, n1)  # a gap
        with pytest.raises(StorageError):
            writer.append(b0, 0, n0)  # the same batch again
        assert store.read_log("s-seq") == head + b0
        writer.append(b1, n0, n1)  # the writer goes on after a refused batch
        assert store.read_log("s-seq") == head + b0 + b1
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("lines", "count", "why"),
    [
        (b'{"type":"x","seq":0,"time":1,"data":{}}', 1, "no final newline"),
        (b'{"type":"x","seq":0,"time":1,"data":{}}\n', 2, "count too large"),
        (b'{"type":"x","seq":0,"time":1,"data":{}}\n\n', 2, "an empty line"),
        (b"", 0, "empty batch"),
    ],
)
def test_malformed_batches_are_refused_before_anything_is_written(
    store: Any, store_spec: dict[str, Any], request: pytest.FixtureRequest, lines: bytes, count: int, why: str
) -> None:
    head = header("s-bad")
    writer = store.open_writer("s-bad", head[:-1])
    try:
        with pytest.raises(InvalidEventError):
            writer.append(lines, 0, count)
        assert store.read_log("s-bad") == head, why
    finally:
        writer.close()


def test_an_existing_session_keeps_its_header_and_events(store: Any) -> None:
    head = header("s-keep", created=111)
    writer = store.open_writer("s-keep", head[:-1])
    b0, n0 = step_batch(0, 0, 2, "a")
    writer.append(b0, 0, n0)
    writer.close()
    writer = store.open_writer("s-keep", header_line("s-keep", created=222))
    try:
        assert writer.read_log() == head + b0
    finally:
        writer.close()


def test_a_second_writer_in_another_process_is_refused_and_told_the_holder(
    store: Any, store_spec: dict[str, Any]
) -> None:
    writer = store.open_writer("s-lock", header_line("s-lock"))
    try:
        proc = start_worker(store_spec, "try-open", session="s-lock", at=0)
        msg = read_message(proc)
        assert proc.wait(timeout=60) == 0
        assert msg.get("locked"), msg
        assert f"{os.getpid()}@{socket.gethostname()}" in msg["holder"]
        assert str(os.getpid()) in msg["message"]
    finally:
        writer.close()
    # released: the next writer gets it
    proc = start_worker(store_spec, "try-open", session="s-lock", at=0)
    msg = read_message(proc)
    assert proc.wait(timeout=60) == 0
    assert msg.get("ok"), msg


def test_the_lock_dies_with_its_process(store: Any, store_spec: dict[str, Any]) -> None:
    proc = start_worker(store_spec, "hold", session="s-dead")
    msg = read_message(proc)
    assert msg.get("ok"), msg
    with pytest.raises(SessionLockedError) as err:
        store.open_writer("s-dead", header_line("s-dead"))
    assert err.value.holder is not None and f"{msg['pid']}@" in err.value.holder
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 20
    while True:
        try:
            writer = store.open_writer("s-dead", header_line("s-dead"))
            break
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    writer.close()


def test_list_sessions_describes_each_session(
    store: Any, store_spec: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    a = store.open_writer("s-a", header_line("s-a", created=1_000))
    b0, n0 = step_batch(0, 0, 2, "a")
    a.append(b0, 0, n0)
    a.close()
    time.sleep(0.01)
    b = store.open_writer("s-b", header_line("s-b", created=2_000))
    try:
        b1, n1 = step_batch(0, 0, 2, "b")
        b.append(b1, 0, n1)
        listed = store.list_sessions()
        assert [s.id for s in listed][:2] == ["s-b", "s-a"], "most recently updated first"
        info_a, info_b = _info(store, "s-a"), _info(store, "s-b")
        assert info_a.holder is None
        assert info_b.holder is not None and f"{os.getpid()}@{socket.gethostname()}" in info_b.holder
        assert (info_a.last_seq, info_a.turns, info_a.created) == (n0 - 1, 1, 1_000)
        assert info_a.size == len(store.read_log("s-a"))
        assert info_a.preview == "task (a)"
        assert info_b.updated >= info_a.updated
    finally:
        b.close()
    assert _info(store, "s-b").holder is None


def test_reading_a_missing_session_is_a_storage_error(store: Any) -> None:
    with pytest.raises(StorageError, match="no-such-session"):
        store.read_log("no-such-session")


def test_a_closed_writer_refuses_to_append(store: Any) -> None:
    writer = store.open_writer("s-closed", header_line("s-closed"))
    writer.close()
    writer.close()  # idempotent
    b0, n0 = step_batch(0, 0, 2, "a")
    with pytest.raises(StorageError):
        writer.append(b0, 0, n0)
    assert store.read_log("s-closed") == header("s-closed")


def test_logs_read_back_load_as_valid_logs(store: Any, tmp_path: Path) -> None:
    writer = store.open_writer("s-valid", header_line("s-valid"))
    seq = 0
    try:
        for step in range(4):
            batch, n = step_batch(seq, step, 4, "a")
            writer.append(batch, seq, n)
            seq += n
    finally:
        writer.close()
    log = store.read_log("s-valid")
    head, events = parse_log(log)
    assert head["id"] == "s-valid"
    assert len(events) == seq
    assert events[-1]["type"] == "turn/end"
    assert load_with_reader(log, tmp_path) == (seq, 1 + 2 * 3 + 1)
