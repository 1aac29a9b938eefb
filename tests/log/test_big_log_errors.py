"""A log file big enough for the core to parse it in parallel chunks (issue 17.2) is checked as
strictly as a small one: damage in any chunk is a `CorruptLogError` naming exactly its line."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldlog import Session
from foldlog.errors import CorruptLogError

#: the core's smallest chunk is 256 KiB (rust/foldlog-core/src/reader/chunks.rs) and it aims at
#: four chunks per thread: a log of more than 4 × 256 KiB is parsed in several chunks
SEVERAL_CHUNKS = 4 * 256 * 1024 + 1


def _damaged(lines: list[bytes], k: int, kind: str) -> list[bytes]:
    out = list(lines)
    if kind == "json":
        out[k] = out[k][:40] + b"}{"
    elif kind == "gap":
        del out[k]
    else:
        out[k] = out[k].replace(b'"surfaceOp":"append"', b'"surfaceOp":"bogus"')
    return out


def test_damage_anywhere_in_a_big_file_names_its_line(tmp_path: Path) -> None:
    s = Session(system="sys")
    for i in range(20_000):
        s.add({"role": "user", "content": f"message {i} " + "x" * 180})
    path = tmp_path / "big.jsonl"
    s.save(path)
    data = path.read_bytes()
    assert len(data) >= SEVERAL_CHUNKS
    lines = data.split(b"\n")
    assert len(Session.load(path).derive_messages()) == 20_001
    bad = tmp_path / "bad.jsonl"
    small = tmp_path / "small.jsonl"
    for kind, says in (("json", "line"), ("gap", "seq"), ("op", 'unknown surfaceOp "bogus"')):
        for k in (2, 3_001, 9_002, 15_003, len(lines) - 3):  # the line before the last event
            bad.write_bytes(b"\n".join(_damaged(lines, k, kind)))
            with pytest.raises(CorruptLogError) as big_error:
                Session.load(bad)
            assert big_error.value.line == k + 1, (kind, k + 1, str(big_error.value))
            assert big_error.value.path == str(bad)
            assert says in str(big_error.value)
            # the same damage in the file cut two lines after it (other chunk bounds; one chunk
            # for the first places): the same error
            small.write_bytes(b"\n".join(_damaged(lines[: k + 3], k, kind)) + b"\n")
            with pytest.raises(CorruptLogError) as small_error:
                Session.load(small)
            assert str(big_error.value).replace(str(bad), "F") == str(small_error.value).replace(
                str(small), "F"
            )
