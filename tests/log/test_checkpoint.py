"""Checkpoints (issue 32, part 4): a released session opens from its checkpoint, reading only its
tail; what it derives, counts, plans and sends is what a full load gives; anything that reads the
whole log reads the rest first; a checkpoint that does not match its log is ignored with a
warning; an erasure removes it, and a rewritten log invalidates it."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import pytest

from foldlog import Session
from foldlog.errors import CheckpointIgnoredWarning
from foldlog.log import checkpoint
from foldlog.log.checkpoint import checkpoint_path, is_partial
from foldlog.log.forks import fork_file
from tests.log.checkpoint_helpers import add_turns, assert_same_ready_state


@pytest.fixture(autouse=True)
def _checkpoint_small_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """These logs are small: checkpoint them anyway (`test_a_short_log_gets_no_checkpoint`)."""
    monkeypatch.setattr(checkpoint, "MIN_EVENTS", 1)


def _released(path: Path, turns: int = 30) -> None:
    """A session of ``turns`` turns, released (its checkpoint written), then closed."""
    s = Session.open(path, system="be brief")
    add_turns(s, 0, turns)
    s.release()
    s.close()


def _full(path: Path) -> Session:
    """The log loaded whole, without its checkpoint."""
    return Session.from_bytes(path.read_bytes(), source=str(path))


def test_release_writes_a_checkpoint_and_load_opens_from_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    assert checkpoint_path(path).is_file()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = Session.load(path)
    assert is_partial(s._core)
    assert_same_ready_state(s, _full(path))
    assert is_partial(s._core)  # deriving, counting, planning and sending read no more


def test_reading_the_whole_log_completes_a_partial_one(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    s = Session.load(path)
    full = _full(path)
    assert is_partial(s._core)
    assert list(s.events) == list(full.events)
    assert not is_partial(s._core)
    assert s.to_bytes() == full.to_bytes() == path.read_bytes()
    assert_same_ready_state(s, full)


def test_the_events_after_the_checkpoint_are_read(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path, 20)
    s = Session.open(path)
    assert is_partial(s._core)
    add_turns(s, 20, 3)
    s.close()  # no release: the checkpoint covers the first 20 turns only
    back = Session.load(path)
    assert is_partial(back._core)
    assert_same_ready_state(back, _full(path))
    assert back.derive_messages()[-1]["content"] == "answer 22"


def test_release_and_reuse_goes_through_the_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.open(path, system="be brief")
    add_turns(s, 0, 10)
    s.release()
    assert s.released
    add_turns(s, 10, 2)  # the reload reads the checkpoint: a partial log that appends
    assert is_partial(s._core)
    s.flush()
    assert_same_ready_state(s, _full(path))
    s.close()
    assert _full(path).derive_messages()[-1]["content"] == "answer 11"


def test_a_compaction_writes_a_checkpoint_at_the_next_flush(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.open(path, system="be brief")
    add_turns(s, 0, 4)
    s.flush()
    assert not checkpoint_path(path).exists()
    s.append_event("compaction/start", {"id": 1})
    s.append_event("compaction/end", {"id": 1})
    assert not checkpoint_path(path).exists()  # written with the events it covers, not before
    s.flush()
    assert checkpoint_path(path).is_file()
    s.close()
    assert is_partial(Session.load(path)._core)


def _ignored(path: Path) -> Session:
    with pytest.warns(CheckpointIgnoredWarning, match="loading the whole log"):
        s = Session.load(path)
    assert not is_partial(s._core)
    return s


def test_an_edited_log_is_loaded_whole_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    data = path.read_bytes()
    at = data.index(b"question 1")
    with open(path, "r+b") as f:  # in place: same file, same length
        f.seek(at)
        f.write(b"QUESTION 1")
    s = _ignored(path)
    assert "QUESTION 1" in [m["content"] for m in s.derive_messages()]


def test_a_truncated_log_is_loaded_whole_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    data = path.read_bytes()
    cut = data.rindex(b"\n", 0, len(data) - 1) + 1  # the last event gone
    with open(path, "r+b") as f:
        f.truncate(cut)
    s = _ignored(path)
    assert s.to_bytes() == data[:cut]


def test_a_rewritten_log_is_loaded_whole_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    Session.load(path).save(path)  # the same bytes, a new file
    s = _ignored(path)
    assert_same_ready_state(s, _full(path))


@pytest.mark.parametrize("damage", ["corrupt", "other version", "cut"])
def test_a_damaged_checkpoint_is_ignored_with_a_warning(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    ckpt = checkpoint_path(path)
    data = ckpt.read_bytes()
    if damage == "corrupt":
        data = data[:-10] + b"X" + data[-9:]
    elif damage == "other version":
        data = data.replace(b'"checkpoint":1', b'"checkpoint":99', 1)
    else:
        data = data[:20]
    ckpt.write_bytes(data)
    assert_same_ready_state(_ignored(path), _full(path))


def _bytes_read() -> int:
    """Bytes this process has read from files so far (Linux: ``rchar`` of /proc/self/io)."""
    with open("/proc/self/io", "rb") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(b"rchar:"))


def _long_released(path: Path) -> None:
    """A released session whose log is long (~4 MB of streamed chunks, off the surface) while
    its checkpoint is small, then a turn stored after its checkpoint."""
    s = Session.open(path, system="be brief")
    for i in range(16):
        s.append_event("assistant/chunk", {"text": f"{i} " + "x" * 256_000})
    add_turns(s, 0, 3)
    s.release()
    s.close()
    s = Session.open(path)
    add_turns(s, 3, 1)
    s.close()  # no release: the checkpoint covers the first 3 turns


def test_opening_for_writing_from_a_checkpoint_reads_its_tail_not_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foldlog.stores.file import FileStoreWriter

    path = tmp_path / "s.jsonl"
    _long_released(path)
    size = path.stat().st_size
    whole_reads: list[Path] = []
    read_log = FileStoreWriter.read_log

    def spy(self: FileStoreWriter) -> bytes:
        whole_reads.append(self.path)
        return read_log(self)

    monkeypatch.setattr(FileStoreWriter, "read_log", spy)
    before = _bytes_read()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = Session.open(path)
    read = _bytes_read() - before
    assert whole_reads == [] and is_partial(s._core)
    assert read < size // 4, f"{read} bytes read to open a log of {size}"
    assert s.derive_messages()[-1]["content"] == "answer 3"
    add_turns(s, 4, 1)
    s.close()
    assert_same_ready_state(Session.load(path), _full(path))


@pytest.mark.parametrize("damage", ["torn", "no newline"])
def test_opening_for_writing_cuts_a_torn_tail_after_the_checkpoint(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "s.jsonl"
    _long_released(path)
    whole = path.read_bytes()
    with open(path, "r+b") as f:
        if damage == "torn":
            f.seek(0, os.SEEK_END)
            f.write(b'{"type":"user/mess')
        else:
            f.truncate(len(whole) - 1)  # the last event (after the checkpoint) without its newline
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a mismatch: no warning about the checkpoint
        s = Session.open(path)
    assert path.read_bytes() == whole  # the torn line cut, the newline put back
    assert (s.torn_tail is not None) == (damage == "torn")
    assert s.derive_messages()[-1]["content"] == "answer 3"
    add_turns(s, 4, 1)
    s.close()
    assert_same_ready_state(Session.load(path), _full(path))


def test_a_torn_tail_after_the_checkpoint_is_left_to_the_full_load(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    with open(path, "ab") as f:
        f.write(b'{"type":"user/mess')
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # not a mismatch: no warning about the checkpoint
        s = Session.load(path)
    assert s.torn_tail is not None and not is_partial(s._core)


def test_an_erasure_removes_the_checkpoint_and_a_stale_one_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _released(path)
    stale = checkpoint_path(path).read_bytes()
    assert b"result 7" in stale  # the checkpoint holds the surface's lines
    s = Session.open(path)
    seq = next(
        i for i, e in enumerate(s.events) if e["type"] == "tool/result" and "result 7" in str(e["data"])
    )
    s.erase([seq], "asked by the user")
    assert not checkpoint_path(path).exists()
    s.close()
    for f in tmp_path.iterdir():
        assert b"result 7" not in f.read_bytes(), f
    # a checkpoint from before the erasure, put back, does not match the rewritten log
    checkpoint_path(path).write_bytes(stale)
    back = _ignored(path)
    assert "result 7" not in str(list(back.derive_messages()))


def test_a_fork_gets_no_checkpoint(tmp_path: Path) -> None:
    """A fork's file starts at its fork point and reads the rest from its parent's log."""
    path = tmp_path / "s.jsonl"
    _released(path, 3)
    f = fork_file(path, None, tmp_path / "f.jsonl")
    add_turns(f, 3, 1)
    f.release()
    assert f.derive_messages()[-1]["content"] == "answer 3"
    f.close()
    assert not checkpoint_path(tmp_path / "f.jsonl").exists()


def test_a_checkpoint_is_a_cache_a_failed_write_never_fails_release(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.open(path, system="be brief")
    add_turns(s, 0, 2)
    checkpoint_path(path).mkdir()  # nothing can be written there
    s.release()
    s.close()
    with pytest.warns(CheckpointIgnoredWarning, match="cannot read it"):
        assert len(Session.load(path)) == len(_full(path))


def test_writing_needs_the_stored_bytes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.open(path, system="be brief")
    add_turns(s, 0, 2)
    s.flush()
    with open(path, "ab") as f:  # the file no longer ends with the log's last event
        f.write(b"\n")
    assert not checkpoint.write(s._core, path)
    os.truncate(path, path.stat().st_size - 1)
    assert checkpoint.write(s._core, path)
    s.close()


def test_a_short_log_gets_no_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(checkpoint, "MIN_EVENTS", 200)
    path = tmp_path / "s.jsonl"
    _released(path, 30)  # 121 events
    assert not checkpoint_path(path).exists()
    _released(tmp_path / "t.jsonl", 60)  # 241 events
    assert checkpoint_path(tmp_path / "t.jsonl").is_file()
    assert oct(checkpoint_path(tmp_path / "t.jsonl").stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in tmp_path.iterdir() if "tmp" in p.name) == []
