"""The loop guard that ends loops: a third identical call in a turn is not run, and the turn moves
to an answer (the next request offers no tools). The same against the real local model is in
tests/providers/test_local_model.py."""

from __future__ import annotations

from foldlog import Agent, Options, Session, tool
from foldlog.providers import Scripted
from foldlog.tools.registry import Tool
from foldlog.tools.runner import REPEAT_REFUSAL
from tests.agent.agent_helpers import call, of_type, reply


def _lookup_tool(runs: list[str]) -> Tool:
    @tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        runs.append(key)
        return f"value of {key}"

    return lookup


def test_the_third_identical_call_in_a_turn_is_refused_and_the_turn_moves_to_an_answer() -> None:
    runs: list[str] = []
    provider = Scripted(
        [
            reply("", call("lookup", {"key": "a"}, "c1")),
            reply("", call("lookup", '{"key":"a"}', "c2")),  # same arguments, other spacing
            reply("", call("lookup", {"key": "b"}, "c3")),  # other arguments: runs
            reply("", call("lookup", '{ "key": "a" }', "c4")),  # the third of the same: refused
            reply("the value of a"),
        ]
    )
    session = Session()
    agent = Agent(provider, [_lookup_tool(runs)], session, Options(max_steps=10))
    assert agent.run_sync("what is a?") == "the value of a"
    assert runs == ["a", "a", "b"]
    results = [e["data"]["message"] for e in of_type(session, "tool/result")]
    assert [r["isError"] for r in results] == [False, False, False, True]
    assert results[3]["content"] == REPEAT_REFUSAL.format(name="lookup")
    assert "already called twice" in results[3]["content"] and "answer now" in results[3]["content"]
    # the request after the refusal offers no tools: the model can only answer
    assert [bool(r.tools) for r in provider.requests] == [True, True, True, True, False]
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"


def test_the_count_starts_again_in_the_next_turn() -> None:
    runs: list[str] = []
    same = [reply("", call("lookup", {"key": "a"}, f"c{i}")) for i in range(4)]
    provider = Scripted([same[0], same[1], reply("a is 1"), same[2], same[3], reply("still 1")])
    agent = Agent(provider, [_lookup_tool(runs)], Session(), Options(max_steps=10))
    assert agent.run_sync("what is a?") == "a is 1"
    assert agent.run_sync("and again?") == "still 1"
    assert runs == ["a", "a", "a", "a"]  # two per turn: none refused


def test_a_model_that_calls_anyway_gets_refusals_until_the_step_limit() -> None:
    runs: list[str] = []
    provider = Scripted([reply("", call("lookup", {"key": "a"}, f"c{i}")) for i in range(5)] + [reply("ok")])
    session = Session()
    agent = Agent(provider, [_lookup_tool(runs)], session, Options(max_steps=5))
    # the scripted model ignores that no tools are offered; its repeats are never run, and the
    # grace step's answer ends the turn
    assert agent.run_sync("a?") == "ok"
    assert runs == ["a", "a"]
    refused = [e for e in of_type(session, "tool/result") if e["data"]["message"]["isError"]]
    assert len(refused) == 3
    assert [bool(r.tools) for r in provider.requests] == [True, True, True, False, False, False]
