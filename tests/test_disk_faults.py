"""Disk faults under a file-backed session: a full disk, a read-only folder, the file changed
under the writer, and a power cut at every byte of the last batch.

The full and read-only disks are real: a small tmpfs mounted for the test (root only, as in
CI; skipped elsewhere). The injected-fault version of the full disk, at every byte of a batch,
is the Rust test ``rust/foldlog-core/tests/store_faults.rs``.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldlog import Session, StorageError
from foldlog.stores import FileStore


def _mount(where: Path, *options: str) -> None:
    subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs, private to the test."""
    where = tmp_path / "disk"
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        _mount(where, "size=256k", "mode=0700")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("this sandbox cannot mount a tmpfs")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(disk: Path, leave: int) -> Path:
    """Fill the disk until about ``leave`` bytes are free; returns the filler (delete it to free space)."""
    filler = disk / "filler"
    stat = os.statvfs(disk)
    free = stat.f_bavail * stat.f_frsize
    with filler.open("wb") as f:
        f.write(b"\0" * max(free - leave, 0))
    return filler


def _contents(path: Path) -> list[str]:
    return [str(m["content"]) for m in Session.load(path).derive_messages()]


def test_a_full_disk_fails_the_flush_keeps_the_last_batch_and_loses_nothing(small_disk: Path) -> None:
    p = small_disk / "s" / "full.jsonl"
    s = Session.open(p, system="sys")
    s.add({"role": "user", "content": "first"})
    s.flush()
    filler = _fill(small_disk, 16 * 1024)
    stored = p.read_bytes()
    sent = ["first"]
    err: StorageError | None = None
    for i in range(200):  # each flush a batch of several events, until the disk is full
        for k in range(3):
            sent.append(f"{i}.{k} " + "x" * 1500)
            s.add({"role": "user", "content": sent[-1]})
        try:
            s.flush()
        except StorageError as e:
            err = e
            break
        stored = p.read_bytes()
    assert err is not None, "the disk never filled"
    assert err.errno == errno.ENOSPC and isinstance(err, OSError)
    assert str(p) in str(err) and "No space left on device" in str(err), str(err)
    assert "last complete batch" in str(err)
    assert p.read_bytes() == stored, "the file is exactly as after the last batch that was stored"
    loaded = Session.load(p)
    assert loaded.torn_tail is None and not loaded.normalized_dirty
    # the failed batch stayed pending: once there is room again, the next flush stores it
    filler.unlink()
    s.add({"role": "user", "content": "after"})
    s.close()
    assert _contents(p) == ["sys", *sent, "after"]


def test_a_full_disk_with_counting_on_writes_the_batch_once_when_space_returns(small_disk: Path) -> None:
    # issue 14: counting (with the agent's exact tokenizer) runs in the flush before the write;
    # the batch that the disk refused is written once, with its counts, by a later flush
    p = small_disk / "counted.jsonl"
    s = Session.open(p, system="sys")
    s.model = "deepseek-v4-flash"
    filler = _fill(small_disk, 8 * 1024)
    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    s.add({"role": "user", "content": [{"type": "text", "text": "x" * 12_000}, image]})
    s.add({"role": "user", "content": "y" * 12_000})
    for _ in range(2):  # failing twice changes nothing
        with pytest.raises(StorageError, match="No space left on device"):
            s.flush()
    filler.unlink()
    s.close()
    loaded = Session.load(p)
    assert [e["seq"] for e in loaded.events] == [0, 1, 2]
    assert all(e["tokens"]["deepseek-v4"] > 0 for e in loaded.events[1:])
    assert loaded.events[1]["tokensEstimated"] is True


def test_save_to_a_full_disk_leaves_no_file(small_disk: Path) -> None:
    s = Session(system="sys")
    for i in range(200):
        s.add({"role": "user", "content": f"{i} " + "y" * 2000})
    target = small_disk / "saved.jsonl"
    with pytest.raises(StorageError, match="No space left on device") as err:
        s.save(target)
    assert err.value.errno == errno.ENOSPC
    assert sorted(x.name for x in small_disk.iterdir()) == [], "neither the file nor its temporary"


def test_a_read_only_folder_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    with Session.open(folder / "old.jsonl") as s:
        s.add({"role": "user", "content": "kept"})
    if os.geteuid() == 0:  # root ignores permission bits: make the file system itself read-only
        try:
            subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True, capture_output=True)
            subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)
        except (OSError, subprocess.CalledProcessError):
            pytest.skip("this sandbox cannot mount")
        expected = errno.EROFS
    else:
        folder.chmod(0o500)
        expected = errno.EACCES
    try:
        with pytest.raises(StorageError, match=f"folder {folder} is not writable") as err:
            Session.open(folder / "new.jsonl")
        assert err.value.errno == expected
        with pytest.raises(StorageError, match="is not writable"):
            Session.open(folder / "old.jsonl")  # continuing needs writing too
        with pytest.raises(
            StorageError,
            match=f"cannot create the folder {folder / 'sub'}: (Read-only file system|Permission denied)",
        ):
            Session.open(FileStore(folder / "sub"), "x")
        with pytest.raises(StorageError, match="is not writable"):
            Session(system="s").save(folder / "copy.jsonl")
        assert _contents(folder / "old.jsonl") == ["kept"], "reading still works"
    finally:
        if expected == errno.EROFS:
            subprocess.run(["umount", str(folder)], check=False)
        else:
            folder.chmod(0o700)


def test_a_truncated_or_replaced_file_is_detected_at_the_next_flush(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    s = Session.open(p)
    s.add({"role": "user", "content": "a"})
    s.add({"role": "user", "content": "b"})
    s.flush()
    good = p.read_bytes()
    with p.open("r+b") as f:
        f.truncate(len(good) - 10)
    s.add({"role": "user", "content": "c"})
    with pytest.raises(StorageError, match=r"changed under its writer: \d+ bytes, expected \d+"):
        s.flush()
    assert p.stat().st_size == len(good) - 10, "the writer did not write after the damage"
    other = tmp_path / "other.jsonl"
    other.write_bytes(good)
    other.replace(p)  # the same bytes, but a different file
    with pytest.raises(StorageError, match="replaced or deleted under its writer"):
        s.flush()
    s._writer = None  # the writer's file is gone: drop it without the final flush
    assert _contents(p) == ["a", "b"]


def test_a_power_cut_at_every_byte_of_the_last_batch_keeps_every_earlier_batch(tmp_path: Path) -> None:
    p = tmp_path / "cut.jsonl"
    batches = [[f"b{b}e{e} " + "é" * (b + e) for e in range(b + 1)] for b in range(4)]
    with Session.open(p) as s:
        for batch in batches[:-1]:
            for text in batch:
                s.add({"role": "user", "content": text})
            s.flush()
        before = p.stat().st_size
        for text in batches[-1]:
            s.add({"role": "user", "content": text})
    data = p.read_bytes()
    earlier = [t for b in batches[:-1] for t in b]
    everything = earlier + batches[-1]
    work = tmp_path / "w.jsonl"
    for cut in range(before, len(data) + 1):
        work.write_bytes(data[:cut])
        got = _contents(work)
        assert got[: len(earlier)] == earlier, f"cut at {cut} lost an earlier batch"
        assert got == everything[: len(got)], f"cut at {cut}: not a prefix of what was written"
        assert (len(got) == len(everything)) == (cut >= len(data) - 1)
    # a writer opened on a cut file cuts the torn tail and continues with whole lines
    for cut in (before + 1, (before + len(data)) // 2, len(data) - 1):
        work.write_bytes(data[:cut])
        with Session.open(work) as s:
            s.add({"role": "user", "content": "next"})
        again = Session.load(work)
        assert again.torn_tail is None
        got = [str(m["content"]) for m in again.derive_messages()]
        assert got[: len(earlier)] == earlier and got[-1] == "next"


def test_a_disk_filling_up_mid_turn_ends_the_turn_and_loses_nothing(small_disk: Path) -> None:
    from foldlog.agent import Agent
    from foldlog.providers.scripted import Scripted

    filler: list[Path] = []

    def fill_disk() -> str:
        """Fill the disk (the tool's result then no longer fits)."""
        filler.append(_fill(small_disk, 0))
        return "filled " + "z" * 10_000

    provider = Scripted(
        [
            {"content": "", "tool_calls": [{"id": "c1", "name": "fill_disk", "arguments": "{}"}]},
            {"content": "done"},
        ]
    )
    p = small_disk / "turn.jsonl"
    session = Session.open(p, system="sys")
    agent = Agent(provider, [fill_disk], session)
    with pytest.raises(StorageError, match="No space left on device"):
        agent.run_sync("fill it")
    # the file holds the turn up to its last stored batch: still open (loading would close it)
    assert Session.load(p).repair_report["turn_closed"]
    filler[0].unlink()
    session.close()  # space is back: the pending events, the turn's end included, are written
    loaded = Session.load(p)
    assert not loaded.normalized_dirty and loaded.open_turn is None
    end = loaded.events[-1]
    assert end["type"] == "turn/end" and end["data"]["reason"]["kind"] == "error"
    assert "StorageError" in end["data"]["reason"]["message"]
    result = next(m for m in loaded.derive_messages() if m["role"] == "tool")
    assert str(result["content"]).startswith("filled zzz")
