"""Session.release() (issue 17): an idle session drops everything it can rebuild and loads it
again on its next use — from its store, or from its own compressed bytes — unchanged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import foldlog
from foldlog import Session, _core
from foldlog.providers import Scripted
from tests.support.history import three_ls_calls

MODEL = "deepseek-chat"  # an exact tokenizer: counts travel in the log


def test_a_file_backed_session_reloads_from_its_store(tmp_path: Path) -> None:
    s = Session.open(tmp_path / "a.jsonl", system="sys")
    s.model = MODEL
    three_ls_calls(s)
    before = list(s.derive_messages())
    count = s.token_count(MODEL)
    snapshot = s.derive_messages()
    s.release()
    assert s.released
    assert s._log is None, "the log is dropped"
    assert snapshot == before, "a snapshot taken before stays valid"
    assert s.derive_messages() == before, "the next use loads the same history"
    assert not s.released
    assert s.token_count(MODEL) == count
    assert _core.cached_token_events(s._core) == len(before), "the counts were read from the log"
    # writing goes on where it stopped, in the same file
    s.add({"role": "user", "content": "more"})
    s.close()
    again = Session.load(tmp_path / "a.jsonl")
    assert list(again.derive_messages()) == [*before, {"role": "user", "content": "more"}]


def test_a_session_without_a_store_keeps_its_own_bytes(tmp_path: Path) -> None:
    s = Session(system="sys")
    three_ls_calls(s)
    events = list(s.events)
    before = list(s.derive_messages())
    s.release()
    s.release()  # twice is harmless
    assert s.released and s._released is not None
    assert len(s._released) < len(s._core.to_bytes()), "kept compressed"
    assert list(s.events) == events and s.derive_messages() == before


def test_an_agent_releases_its_session_when_idle(tmp_path: Path) -> None:
    replies = [{"content": "one"}, {"content": "two"}]
    session = Session.open(tmp_path / "b.jsonl", system="sys")
    agent = foldlog.Agent(Scripted(replies), [], session)
    assert agent.options.release_when_idle, "on by default"
    assert asyncio.run(agent.run("first")) == "one"
    assert session.released, "released after the run"
    assert asyncio.run(agent.run("second")) == "two"
    roles = [m["role"] for m in session.derive_messages()]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    session.close()


def test_release_when_idle_can_be_turned_off(tmp_path: Path) -> None:
    session = Session.open(tmp_path / "c.jsonl", system="sys")
    options = foldlog.Options(release_when_idle=False)
    agent = foldlog.Agent(Scripted([{"content": "one"}]), [], session, options)
    asyncio.run(agent.run("first"))
    assert not session.released
    session.close()


def test_a_released_file_session_keeps_its_lock_and_closes_its_file(tmp_path: Path) -> None:
    import os

    import pytest

    from foldlog.errors import SessionLockedError

    def open_fds() -> int:
        return len(os.listdir("/proc/self/fd"))

    s = Session.open(tmp_path / "d.jsonl", system="sys")
    before = open_fds()
    s.release()
    assert open_fds() == before - 1, "the session file is closed while idle"
    with pytest.raises(SessionLockedError):
        Session.open(tmp_path / "d.jsonl")
    s.add({"role": "user", "content": "back"})
    s.flush()
    assert open_fds() == before, "the next write opens it again"
    s.close()
    assert [m["role"] for m in Session.load(tmp_path / "d.jsonl").derive_messages()] == ["system", "user"]
