"""File-backed sessions: single writer, crash safety, concurrent readers, big logs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from foldlog import Session, SessionLockedError, StorageError
from foldlog.stores import FileStore


def test_open_creates_and_continues(tmp_path: Path) -> None:
    p = tmp_path / "s" / "one.jsonl"
    with Session.open(p, system="sys") as s:
        s.add({"role": "user", "content": "a"})
    assert p.stat().st_mode & 0o777 == 0o600
    assert p.parent.stat().st_mode & 0o777 == 0o700
    first = p.read_text().splitlines()[0]
    assert '"type":"session"' in first and '"id":"one"' in first
    with Session.open(p, system="ignored when continuing") as s:
        assert [m["content"] for m in s.derive_messages()] == ["sys", "a"]
        s.add({"role": "user", "content": "b"})
    assert [m["content"] for m in Session.load(p).derive_messages()] == ["sys", "a", "b"]


def test_store_folder_and_ids(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "store")
    with Session.open(store, "abc-1") as s:
        s.add({"role": "user", "content": "x"})
    assert (tmp_path / "store" / "abc-1.jsonl").exists()
    assert [x.id for x in store.list_sessions()] == ["abc-1"]
    with pytest.raises(ValueError, match="invalid session id"):
        Session.open(store, "../escape")


def test_flush_writes_batches_only_at_flush(tmp_path: Path) -> None:
    p = tmp_path / "b.jsonl"
    s = Session.open(p)
    s.add({"role": "user", "content": "x"})
    assert len(p.read_text().splitlines()) == 1, "only the header until the batch is flushed"
    s.flush()
    assert len(p.read_text().splitlines()) == 2
    s.close()
    s.close()


def test_second_writer_is_refused_at_once_naming_the_holder(tmp_path: Path) -> None:
    p = tmp_path / "locked.jsonl"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import sys, time
            from foldlog import Session
            s = Session.open({str(p)!r})
            print("ready", flush=True)
            sys.stdin.readline()
        """),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        t0 = time.monotonic()
        with pytest.raises(SessionLockedError) as err:
            Session.open(p)
        assert time.monotonic() - t0 < 2, "refused at once, not after a wait"
        assert err.value.holder is not None and f"pid {holder.pid}@" in err.value.holder
        assert str(holder.pid) in str(err.value)
        assert isinstance(err.value, StorageError) and isinstance(err.value, OSError)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
    with Session.open(p) as s:  # released when the holder exits
        assert s.writable


WRITER = textwrap.dedent("""
    import sys
    from foldlog import Session
    s = Session.open(sys.argv[1])
    i = 0
    while True:
        s.add({"role": "user", "content": "x" * (i % 50) + str(i)})
        if i % 3 == 2:
            s.flush()
            print(i, flush=True)
        i += 1
""")


def test_writer_killed_mid_stream_loses_nothing_it_flushed(tmp_path: Path) -> None:
    p = tmp_path / "killed.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(p)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    last = -1
    for line in proc.stdout:
        last = int(line)
        if last >= 300:
            break
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    proc.stdout.close()
    s = Session.load(p)
    contents = [m["content"] for m in s.derive_messages()]
    assert len(contents) >= last + 1, "every flushed event survived"
    for i, c in enumerate(contents):
        assert c.endswith(str(i))
    with Session.open(p) as w:  # the lock died with the process; the writer continues the file
        w.add({"role": "user", "content": "after"})
    assert Session.load(p).derive_messages()[-1]["content"] == "after"


def test_readers_in_threads_never_see_half_an_event(tmp_path: Path) -> None:
    s = Session.open(tmp_path / "r.jsonl")
    stop = threading.Event()
    problems: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            msgs = s.snapshot()
            for i, m in enumerate(msgs):
                if m["content"] != f"m{i}":
                    problems.append(f"message {i} is {m!r}")
                    return
            n = len(s.events)
            if n and s.events[n - 1]["seq"] != n - 1:
                problems.append("event seq out of place")
                return

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for i in range(2000):
        s.add({"role": "user", "content": f"m{i}"})
        if i % 50 == 0:
            s.flush()
    stop.set()
    for t in threads:
        t.join()
    s.close()
    assert not problems
    assert len(Session.load(tmp_path / "r.jsonl").events) == 2000


def test_file_changed_under_the_writer_is_detected(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    s = Session.open(p)
    s.add({"role": "user", "content": "a"})
    s.flush()
    with p.open("ab") as f:
        f.write(b'{"type":"turn/start","seq":1,"time":1,"data":{"turn":9}}\n')
    s.add({"role": "user", "content": "b"})
    with pytest.raises(StorageError, match="changed under its writer"):
        s.flush()
    p.unlink()
    with pytest.raises(StorageError, match="deleted"):
        s.flush()


def test_torn_tail_is_cut_before_the_writer_continues(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with Session.open(p) as s:
        for i in range(5):
            s.add({"role": "user", "content": f"u{i}"})
    data = p.read_bytes()
    p.write_bytes(data[:-9])  # a power cut in the middle of the last line
    with Session.open(p) as s:
        assert s.torn_tail is not None
        s.add({"role": "user", "content": "next"})
    again = Session.load(p)
    assert [m["content"] for m in again.derive_messages()] == ["u0", "u1", "u2", "u3", "next"]
    assert again.torn_tail is None


def test_every_cut_of_the_last_batch_loads(tmp_path: Path) -> None:
    p = tmp_path / "cut.jsonl"
    with Session.open(p) as s:
        s.add({"role": "user", "content": "kept"})
        s.flush()
        before = p.stat().st_size
        s.add({"role": "assistant", "content": "é" * 5})
        s.add({"role": "user", "content": "x"})
    data = p.read_bytes()
    for cut in range(before, len(data) + 1):
        p.write_bytes(data[:cut])
        s = Session.load(p)
        assert s.derive_messages()[0]["content"] == "kept", f"cut at {cut} lost an earlier batch"


def test_a_100k_event_log_loads_and_derives(tmp_path: Path) -> None:
    p = tmp_path / "big.jsonl"
    s = Session(system="sys")
    for i in range(25_000):
        s.append_event("turn/start", {"turn": i + 1})
        s.add({"role": "user", "content": f"question {i}"})
        s.add({"role": "assistant", "content": f"answer {i} " * 8})
        s.append_event("turn/end", {"turn": i + 1, "reason": {"kind": "completed"}})
    s.save(p)
    assert os.path.getsize(p) > 5_000_000
    loaded = Session.load(p)
    assert len(loaded.events) == 100_001
    msgs = loaded.derive_messages()
    assert len(msgs) == 50_001
    assert msgs[-1]["content"].startswith("answer 24999")
    assert not loaded.normalized_dirty
