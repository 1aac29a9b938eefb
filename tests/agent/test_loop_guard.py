"""The loop guard acts on no progress only: a call that returns the same result for the same
arguments three times in a row, with nothing that may change state in between, gets a notice and
the turn moves to an answer (the next request offers no tools). A repeated call whose result
changed, or that follows an edit, is progress and runs like any other. The same against the real
local model is in tests/providers/test_local_model.py."""

from __future__ import annotations

from foldlog import Agent, Options, Session, tool
from foldlog.providers import Scripted
from foldlog.tools.registry import Tool
from foldlog.tools.runner import NO_PROGRESS
from tests.agent.agent_helpers import call, of_type, reply


def _lookup_tool(runs: list[str]) -> Tool:
    @tool(read_only=True)
    def lookup(key: str) -> str:
        """Look a key up."""
        runs.append(key)
        return f"value of {key}"

    return lookup


def _results(session: Session) -> list[dict[str, object]]:
    return [dict(e["data"]["message"]) for e in of_type(session, "tool/result")]


def test_edit_test_edit_test_runs_every_test_and_keeps_the_tools() -> None:
    """The issue's case: the third identical ``run_tests`` comes after an edit, so it runs (the
    old guard refused it and withdrew the tools, and the model reported a success it never saw)."""
    state = {"fixed": 0}
    runs: list[str] = []

    @tool
    def run_tests(command: str) -> str:
        """Run the tests."""
        runs.append(command)
        return "1 passed" if state["fixed"] >= 2 else "1 failed: test_parse"

    @tool
    def edit_file(path: str, text: str) -> str:
        """Edit a file."""
        state["fixed"] += 1
        return f"edited {path}"

    tests = {"command": "pytest -q"}
    provider = Scripted(
        [
            reply("", call("run_tests", tests, "t1")),
            reply("", call("edit_file", {"path": "a.py", "text": "x"}, "e1")),
            reply("", call("run_tests", tests, "t2")),  # still failing: the same result as t1
            reply("", call("edit_file", {"path": "a.py", "text": "y"}, "e2")),
            reply("", call("run_tests", tests, "t3")),  # the third identical call: runs, passes
            reply("all tests pass"),
        ]
    )
    session = Session()
    agent = Agent(provider, [run_tests, edit_file], session, Options(max_steps=10))
    assert agent.run_sync("fix the parser") == "all tests pass"
    assert runs == ["pytest -q"] * 3
    results = _results(session)
    assert [r["content"] for r in results] == [
        "1 failed: test_parse",
        "edited a.py",
        "1 failed: test_parse",
        "edited a.py",
        "1 passed",
    ]
    assert not any("[loop guard]" in str(r["content"]) for r in results)
    assert all(r.tools for r in provider.requests)  # tools offered on every request


def test_a_repeated_call_whose_result_changes_always_runs() -> None:
    """A poll: the same call, nothing between, but its result changes: progress, never judged."""
    answers = iter(["queued", "running", "running", "done"])

    @tool(read_only=True)
    def job_status(job: str) -> str:
        """Poll a job."""
        return next(answers)

    provider = Scripted(
        [reply("", call("job_status", {"job": "7"}, f"p{i}")) for i in range(4)] + [reply("done")]
    )
    session = Session()
    agent = Agent(provider, [job_status], session, Options(max_steps=10))
    assert agent.run_sync("wait for job 7") == "done"
    assert [r["content"] for r in _results(session)] == ["queued", "running", "running", "done"]
    assert all(r.tools for r in provider.requests)


def test_the_same_result_three_times_in_a_row_moves_the_turn_to_an_answer() -> None:
    runs: list[str] = []
    provider = Scripted(
        [
            reply("", call("lookup", {"key": "a"}, "c1")),
            reply("", call("lookup", '{"key":"a"}', "c2")),  # same arguments, other spacing
            reply("", call("lookup", {"key": "b"}, "c3")),  # read-only, in between: changes nothing
            reply("", call("lookup", '{ "key": "a" }', "c4")),  # the third same result: judged
            reply("the value of a"),
        ]
    )
    session = Session()
    agent = Agent(provider, [_lookup_tool(runs)], session, Options(max_steps=10))
    assert agent.run_sync("what is a?") == "the value of a"
    assert runs == ["a", "a", "b", "a"]  # the call ran: the guard judges results, never refuses
    results = _results(session)
    assert [r["isError"] for r in results] == [False, False, False, False]
    notice = NO_PROGRESS.format(name="lookup", n=3)
    assert results[3]["content"] == notice + "\nvalue of a"
    assert "answer now" in notice
    # the request after it offers no tools: the model can only answer
    assert [bool(r.tools) for r in provider.requests] == [True, True, True, True, False]
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"


def test_a_call_that_may_change_state_in_between_starts_the_count_again() -> None:
    runs: list[str] = []

    @tool
    def touch(path: str) -> str:
        """Touch a file."""
        return "ok"

    a = call("lookup", {"key": "a"})
    provider = Scripted(
        [
            reply("", {**a, "id": "c1"}),
            reply("", {**a, "id": "c2"}),
            reply("", call("touch", {"path": "x"}, "t")),  # not read-only: the state may differ now
            reply("", {**a, "id": "c3"}),
            reply("", {**a, "id": "c4"}),
            reply("a is 1"),
        ]
    )
    session = Session()
    agent = Agent(provider, [_lookup_tool(runs), touch], session, Options(max_steps=10))
    assert agent.run_sync("what is a?") == "a is 1"
    assert not any("[loop guard]" in str(r["content"]) for r in _results(session))
    assert all(r.tools for r in provider.requests)


def test_the_count_starts_again_in_the_next_turn() -> None:
    runs: list[str] = []
    same = [reply("", call("lookup", {"key": "a"}, f"c{i}")) for i in range(4)]
    provider = Scripted([same[0], same[1], reply("a is 1"), same[2], same[3], reply("still 1")])
    session = Session()
    agent = Agent(provider, [_lookup_tool(runs)], session, Options(max_steps=10))
    assert agent.run_sync("what is a?") == "a is 1"
    assert agent.run_sync("and again?") == "still 1"
    assert runs == ["a", "a", "a", "a"]  # two per turn: none judged
    assert not any("[loop guard]" in str(r["content"]) for r in _results(session))


def test_a_model_that_calls_anyway_is_bounded_by_the_step_limit() -> None:
    runs: list[str] = []
    provider = Scripted([reply("", call("lookup", {"key": "a"}, f"c{i}")) for i in range(5)] + [reply("ok")])
    session = Session()
    agent = Agent(provider, [_lookup_tool(runs)], session, Options(max_steps=5))
    # the scripted model ignores that no tools are offered; each repeat runs, is told it made no
    # progress, and the grace step's answer ends the turn
    assert agent.run_sync("a?") == "ok"
    assert runs == ["a"] * 5
    judged = [r for r in _results(session) if str(r["content"]).startswith("[loop guard]")]
    assert len(judged) == 3
    assert [bool(r.tools) for r in provider.requests] == [True, True, True, False, False, False]
