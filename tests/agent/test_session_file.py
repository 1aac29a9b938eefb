from __future__ import annotations

from pathlib import Path

from foldlog import Agent, Session, tool
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, reply


@tool(read_only=True)
def count(word: str) -> int:
    """Count letters."""
    return len(word)


def test_file_backed_session_reloads_and_continues(tmp_path: Path) -> None:
    path = tmp_path / "s1.jsonl"
    p = Scripted([reply("", call("count", {"word": "hello"}, "c1")), reply("5 letters")])
    with Session.open(path, system="counter") as s:
        assert Agent(p, [count], s).run_sync("count hello") == "5 letters"
        before = s.derive_messages()
        n_events = len(s.events)
    loaded = Session.load(path)
    assert loaded.derive_messages() == before
    assert len(loaded.events) == n_events
    assert not loaded.normalized_dirty
    # a new agent on the reopened file continues the numbering and the history
    p2 = Scripted([reply("again")])
    with Session.open(path) as s2:
        assert Agent(p2, [count], s2).run_sync("more") == "again"
        assert p2.requests[0].messages[: len(before)] == list(s2.wire_messages())[: len(before)]
    final = Session.load(path)
    turns = [e["data"]["turn"] for e in final.events if e["type"] == "turn/start"]
    assert turns == [1, 2]


def test_cancelled_run_leaves_loadable_log(tmp_path: Path) -> None:
    import pytest

    from foldlog import RunCancelled
    from foldlog.events import Text

    path = tmp_path / "s2.jsonl"
    agent: Agent

    def sink(ev: object) -> None:
        if isinstance(ev, Text):
            agent.cancel()

    with Session.open(path, system="x") as s:
        agent = Agent(Scripted([reply("partial", hang=True)]), [], s, sink=sink)
        with pytest.raises(RunCancelled):
            agent.run_sync("go")
    loaded = Session.load(path)
    assert not loaded.normalized_dirty
    assert loaded.derive_messages()[-1]["role"] == "assistant"
    assert [e["type"] for e in loaded.events][-1] == "turn/end"
