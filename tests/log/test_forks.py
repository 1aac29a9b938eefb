"""Forks: a session that starts as another's history up to an event, then goes on by itself.

A file fork refers to its parent's log (no copy); loading follows the reference; the fork's own
events continue the parent's seqs. Real files in a temporary folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldlog import Session
from foldlog.errors import ForkError, ParentLogError, StorageError
from foldlog.log.forks import MAX_FORK_DEPTH, fork_file, fork_link, fork_session


def _parent(folder: Path, sid: str = "parent") -> Session:
    s = Session.open(folder, sid, system="be brief")
    s.add({"role": "user", "content": "one"})
    s.add({"role": "assistant", "content": "first answer"})
    s.add({"role": "user", "content": "two"})
    s.add({"role": "assistant", "content": "second answer"})
    s.flush()
    return s


def _contents(session: Session) -> list[str]:
    return [str(m["content"]) for m in session.derive_messages()]


def test_a_file_fork_refers_to_its_parent_and_diverges(tmp_path: Path) -> None:
    parent = _parent(tmp_path)
    fork = fork_session(parent, at_seq=2)
    assert fork.path is not None and fork.path.parent == tmp_path and fork.writable
    assert dict(fork.parent or {}) == fork_link("parent", 2, "parent.jsonl")
    assert _contents(fork) == ["be brief", "one", "first answer"]
    assert fork.add({"role": "user", "content": "other question"}) == 3  # seqs continue the parent's
    fork.close()
    parent.add({"role": "user", "content": "three"})
    parent.close()

    # the fork's file holds its header and its own event only: the parent's bytes are not copied
    lines = fork.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and json.loads(lines[1])["seq"] == 3
    assert "first answer" not in fork.path.read_text(encoding="utf-8")

    again = Session.load(fork.path)
    assert _contents(again) == ["be brief", "one", "first answer", "other question"]
    assert [e["seq"] for e in again.events] == [0, 1, 2, 3]
    assert not again.normalized_dirty
    assert _contents(Session.load(tmp_path / "parent.jsonl"))[-1] == "three"  # the parent went on


def test_a_fork_reopened_for_writing_and_released_reads_its_parent_again(tmp_path: Path) -> None:
    _parent(tmp_path).close()
    first = fork_file(tmp_path / "parent.jsonl", 4, tmp_path / "f1.jsonl")
    first.close()
    f = Session.open(tmp_path / "f1.jsonl")
    assert len(f.events) == 5
    f.add({"role": "user", "content": "after reopening"})
    f.release()
    f.add({"role": "assistant", "content": "after release"})
    f.close()
    assert _contents(Session.load(tmp_path / "f1.jsonl"))[-2:] == ["after reopening", "after release"]


def test_a_fork_of_a_fork_follows_both_references(tmp_path: Path) -> None:
    _parent(tmp_path).close()
    a = fork_file(tmp_path / "parent.jsonl", 2, tmp_path / "a.jsonl")
    a.add({"role": "user", "content": "a's question"})
    b = fork_session(a)  # at a's last event, beside it
    a.add({"role": "assistant", "content": "only in a"})
    a.close()
    b.add({"role": "assistant", "content": "only in b"})
    b.close()
    assert b.path is not None and (b.parent or {})["log"] == "a.jsonl"
    assert _contents(Session.load(b.path)) == ["be brief", "one", "first answer", "a's question", "only in b"]


def test_a_fork_mid_turn_is_repaired_in_its_own_file(tmp_path: Path) -> None:
    s = Session.open(tmp_path, "p")
    s.append_event("turn/start", {"turn": 1})
    s.append_event("step/start", {"turn": 1, "step": 1})
    s.add({"role": "user", "content": "q"})
    s.close()
    fork = fork_file(tmp_path / "p.jsonl", 2, tmp_path / "f.jsonl")
    assert fork.repair_report["events_added"] > 0  # the open step and turn are closed in the fork
    fork.close()
    assert len((tmp_path / "p.jsonl").read_text(encoding="utf-8").splitlines()) == 4  # parent untouched
    assert Session.load(tmp_path / "f.jsonl").open_turn is None


def test_a_missing_parent_is_named(tmp_path: Path) -> None:
    _parent(tmp_path).close()
    fork_file(tmp_path / "parent.jsonl", 1, tmp_path / "f.jsonl").close()
    (tmp_path / "parent.jsonl").rename(tmp_path / "moved.jsonl")
    with pytest.raises(ParentLogError, match=r"parent's log .*parent\.jsonl does not exist") as err:
        Session.load(tmp_path / "f.jsonl")
    assert err.value.parent == str(tmp_path / "parent.jsonl")
    assert isinstance(err.value, StorageError)
    with pytest.raises(ParentLogError, match="does not exist"):
        Session.open(tmp_path / "f.jsonl")


def _write_fork(path: Path, sid: str, parent: str, log: str, at: int = 0) -> None:
    header = {
        "type": "session",
        "version": 1,
        "id": sid,
        "createdAt": 1,
        "parent": fork_link(parent, at, log),
    }
    path.write_text(json.dumps(header) + "\n", encoding="utf-8")


def test_loops_and_too_deep_chains_are_refused(tmp_path: Path) -> None:
    _write_fork(tmp_path / "x.jsonl", "x", "y", "y.jsonl")
    _write_fork(tmp_path / "y.jsonl", "y", "x", "x.jsonl")
    with pytest.raises(ParentLogError, match="loop"):
        Session.load(tmp_path / "x.jsonl")

    Session.open(tmp_path, "s0", system="root").close()
    for n in range(1, MAX_FORK_DEPTH + 1):
        _write_fork(tmp_path / f"s{n}.jsonl", f"s{n}", f"s{n - 1}", f"s{n - 1}.jsonl")
    assert len(Session.load(tmp_path / f"s{MAX_FORK_DEPTH - 1}.jsonl").events) == 1
    with pytest.raises(ParentLogError, match=f"deeper than {MAX_FORK_DEPTH}"):
        Session.load(tmp_path / f"s{MAX_FORK_DEPTH}.jsonl")


def test_a_reference_that_does_not_match_its_parent_is_refused(tmp_path: Path) -> None:
    _parent(tmp_path).close()
    _write_fork(tmp_path / "wrong-id.jsonl", "w", "someone-else", "parent.jsonl")
    with pytest.raises(ParentLogError, match="holds session 'parent', not 'someone-else'"):
        Session.load(tmp_path / "wrong-id.jsonl")
    _write_fork(tmp_path / "too-far.jsonl", "t", "parent", "parent.jsonl", at=99)
    with pytest.raises(ParentLogError, match=r"at event #99, but .* holds 5 events"):
        Session.load(tmp_path / "too-far.jsonl")


def test_bad_fork_points_are_refused(tmp_path: Path) -> None:
    parent = _parent(tmp_path)
    for bad in (-1, 5, 100):
        with pytest.raises(ForkError, match=f"no stored event #{bad}"):
            fork_session(parent, at_seq=bad)
    with pytest.raises(ForkError, match="an int"):
        fork_session(parent, at_seq=True)
    taken = tmp_path / "taken.jsonl"
    taken.write_text("", encoding="utf-8")
    with pytest.raises(ForkError, match="exists"):
        fork_session(parent, path=taken)
    parent.close()
    with pytest.raises(ForkError, match="without events"):
        fork_session(Session())


def test_a_session_in_memory_forks_by_copying(tmp_path: Path) -> None:
    s = Session(system="sys", id="mem")
    s.add({"role": "user", "content": "q"})
    s.add({"role": "assistant", "content": "a"})
    fork = fork_session(s, at_seq=1)
    assert fork.path is None and dict(fork.parent or {}) == {"kind": "fork", "id": "mem", "atSeq": 1}
    fork.add({"role": "assistant", "content": "other a"})
    assert _contents(fork) == ["sys", "q", "other a"]
    assert _contents(s) == ["sys", "q", "a"]

    saved = fork_session(s, path=tmp_path / "copy.jsonl")  # into a file: a copy, open for writing
    assert saved.writable and "log" not in (saved.parent or {})
    saved.close()
    assert _contents(Session.load(tmp_path / "copy.jsonl")) == ["sys", "q", "a"]
