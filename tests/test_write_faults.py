"""Nothing is refused or lost at write time (issue 14, item 1): whatever makes a flush fail —
counting, the store encoding the batch, the disk — the batch is written, or stays pending and a
later flush or close writes it exactly once. (The full disk is in test_disk_faults.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from foldlog import Session, StorageError

MODEL = "deepseek-v4-flash"


def test_a_tokenizer_that_cannot_load_does_not_stop_the_write(tmp_path: Path) -> None:
    """Counting runs in the flush; its tokenizer data missing must not keep the batch off disk."""
    p = tmp_path / "t.jsonl"
    code = textwrap.dedent(
        f"""
        import foldlog
        s = foldlog.Session.open({str(p)!r}, system="sys")
        s.model = {MODEL!r}
        for i in range(4):
            s.add({{"role": "user", "content": f"m{{i}}"}})
        s.flush()
        s.add({{"role": "user", "content": "last"}})
        s.close()
        """
    )
    env = {**os.environ, "FOLDLOG_DEEPSEEK_TOKENIZER": str(tmp_path / "missing" / "tokenizer.json")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "batch written without token counts" in done.stderr and "tokenizer data not found" in done.stderr
    contents = [m["content"] for m in Session.load(p).derive_messages()]
    assert contents == ["sys", "m0", "m1", "m2", "m3", "last"]
    # written without counts: a later reader counts them (here the tokenizer is installed)
    lines = [json.loads(x) for x in p.read_text().splitlines()[1:]]
    assert not any("tokens" in e for e in lines)
    assert Session.load(p).token_count(MODEL) > 0


class FlakyStore:
    """A store kept in memory whose backend fails to encode the first ``failures`` batches (a
    codec, a driver's serialiser), then recovers. Implements the `StoreWriter` protocol."""

    def __init__(self, failures: int) -> None:
        self.stored = b""
        self.failures = failures
        self.attempts = 0

    def open_writer(self, session_id: str, header: bytes) -> FlakyStore:
        if not self.stored:
            self.stored = header + b"\n"
        return self

    def read_log(self) -> bytes:
        return self.stored

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        self.attempts += 1
        if self.failures:
            self.failures -= 1
            raise StorageError(f"cannot encode the batch of {count} event(s) at seq {first_seq}")
        self.stored += lines

    def close(self) -> None:
        pass


def test_a_batch_the_store_fails_to_encode_stays_pending_and_is_written_once() -> None:
    store = FlakyStore(failures=0)
    s = Session.open(store, "flaky", system="sys")
    s.model = MODEL
    store.failures = 2
    s.add({"role": "user", "content": "one"})
    s.add(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "an image:"},
                {"type": "image_url", "image_url": {"url": "https://x/a.png"}},
            ],
        }
    )
    for _ in range(2):
        with pytest.raises(StorageError, match="cannot encode"):
            s.flush()
    s.add({"role": "user", "content": "three"})
    s.close()  # the store recovered: close writes everything pending, once
    loaded = Session.from_bytes(store.stored)
    seqs = [e["seq"] for e in loaded.events]
    assert seqs == list(range(4)), "every event exactly once, in order"
    assert loaded.derive_messages() == s.derive_messages()
    assert all("tokens" in e for e in loaded.events[1:]), "the counts travel with the batch"


def test_a_batch_is_written_once_even_when_flushed_again_after_a_failure(tmp_path: Path) -> None:
    # the same with the file store: a batch refused by the file (changed under the writer) is
    # kept; once the file is put back, the batch goes in after the last stored one
    p = tmp_path / "f.jsonl"
    s = Session.open(p, system="sys")
    s.model = MODEL
    s.add({"role": "user", "content": "a"})
    s.flush()
    good = p.read_bytes()
    p.write_bytes(good + b"\n")  # one byte more than the writer left
    s.add({"role": "user", "content": "b"})
    with pytest.raises(StorageError, match="changed under its writer"):
        s.flush()
    p.write_bytes(good)
    s.add({"role": "user", "content": "c"})
    s.close()
    loaded = Session.load(p)
    assert [e["seq"] for e in loaded.events] == [0, 1, 2, 3]
    assert [m["content"] for m in loaded.derive_messages()] == ["sys", "a", "b", "c"]
