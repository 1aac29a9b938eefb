"""Issue 26, item 1: a file that is not a log is refused by every path that reads or opens logs,
with `NotALogError` naming the file and its first line, and its bytes are never changed (no torn
tail is cut out of something that was never a log)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldlog import Session
from foldlog.errors import CorruptLogError, NotALogError
from foldlog.stores.file import FileStore
from tests.cli.cli_testlib import run_cli

HEADER = json.dumps(
    {"type": "session", "version": 1, "id": "s", "createdAt": 0, "parent": None, "meta": {}},
    separators=(",", ":"),
)
EVENT = json.dumps(
    {
        "type": "user/message",
        "seq": 0,
        "time": 1,
        "data": {"role": "user", "content": "hi"},
        "surfaceOp": "append",
    },
    separators=(",", ":"),
)

NOT_LOGS: dict[str, tuple[bytes, str]] = {
    "note": (b"TODO: call the bank\n", "TODO: call the bank"),
    "note without newline": (b"TODO: call the bank", "TODO: call the bank"),
    "header behind a BOM": (
        b"\xef\xbb\xbf" + HEADER.encode() + b"\n" + EVENT.encode() + b"\n",
        "byte order mark",
    ),
    "lone torn header": (HEADER[:30].encode(), "not a foldlog header or event"),
    "lone torn event": (EVENT[:40].encode() + b"\n", "not a foldlog header or event"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xd8", "not UTF-8"),
    "foreign JSON": (b'{"type":"user","message":{"role":"user","content":"hi"}}\n', "foldlog log import"),
}


def _assert_refused(err: pytest.ExceptionInfo[NotALogError], path: Path, found: str) -> None:
    assert isinstance(err.value, CorruptLogError), "callers catching CorruptLogError still catch it"
    assert err.value.line == 1 and err.value.path is not None and str(path) in err.value.path
    assert "not a foldlog log" in str(err.value) and "line 1" in str(err.value)
    assert found in str(err.value)


@pytest.mark.parametrize("case", sorted(NOT_LOGS))
def test_not_a_log_is_refused_and_left_as_it_is(tmp_path: Path, case: str) -> None:
    data, found = NOT_LOGS[case]
    path = tmp_path / "notes.jsonl"
    path.write_bytes(data)
    with pytest.raises(NotALogError) as loaded:
        Session.load(path)
    _assert_refused(loaded, path, found)
    with pytest.raises(NotALogError) as opened:
        Session.open(path)
    _assert_refused(opened, path, found)
    assert path.read_bytes() == data
    with pytest.raises(NotALogError):
        Session.from_bytes(data, source="notes")
    # a folder of sessions (the file store's writer) refuses it the same way
    with pytest.raises(NotALogError):
        Session.open(tmp_path, "notes")
    with pytest.raises(NotALogError):
        Session.open(FileStore(tmp_path), "notes")
    assert path.read_bytes() == data


def test_log_repair_refuses_a_note_with_a_named_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b"TODO: call the bank\n")
    proc = run_cli("log", "repair", str(path), home=tmp_path)
    assert proc.returncode == 1, proc
    assert "not a foldlog log" in proc.stderr and str(path) in proc.stderr and "line 1" in proc.stderr
    assert "TODO: call the bank" in proc.stderr and "Traceback" not in proc.stderr
    assert "cut" not in proc.stdout
    assert path.read_bytes() == b"TODO: call the bank\n"


def test_a_header_without_its_newline_is_kept_not_cut(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER.encode())
    assert Session.load(path).torn_tail is None
    proc = run_cli("log", "repair", str(path), home=tmp_path)
    assert proc.returncode == 0 and "nothing to repair" in proc.stdout, proc
    assert path.read_bytes() == HEADER.encode() + b"\n", "only the missing newline is added"


def test_a_torn_line_after_a_valid_header_is_still_cut(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    whole = f"{HEADER}\n{EVENT}\n".encode()
    path.write_bytes(whole + EVENT[:30].encode())
    with Session.open(path) as s:
        assert s.torn_tail is not None and s.torn_tail["line"] == 3
        assert len(s.events) == 1
    assert path.read_bytes() == whole
