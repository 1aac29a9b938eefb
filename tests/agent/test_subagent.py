from __future__ import annotations

from typing import Any

import pytest

from foldlog import Agent, FoldlogError, Options, Session, run_subagent, tool
from foldlog.agent.subagent import NestedSink, child_steps, task_tool
from foldlog.events import Text, ToolDispatch, ToolResult, Usage
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, of_type, reply


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def test_task_tool_runs_child_and_nests_events(session: Session) -> None:
    events: list[Any] = []
    p = Scripted(
        [
            reply("delegating", call("task", {"prompt": "find k"}, "t1")),  # parent step 1
            reply("child thinking", call("lookup", {"key": "k"}, "c1")),  # child step 1
            reply("the value is value-of-k"),  # child final
            reply("done: value-of-k"),  # parent final
        ]
    )
    agent = Agent(p, [lookup, task_tool()], session, Options(max_steps=20), events.append)
    assert agent.run_sync("what is k?") == "done: value-of-k"
    # the child got a fresh session with the same system prompt and no task tool
    child_req = p.requests[1]
    assert [m["role"] for m in child_req.messages] == ["system", "user"]
    assert child_req.messages[1]["content"] == "find k"
    assert [t["function"]["name"] for t in child_req.tools] == ["lookup"]
    # only the child's final answer returns to the parent
    res = of_type(session, "tool/result")[0]["data"]["message"]
    assert res["content"] == "the value is value-of-k" and not res["isError"]
    # nested sink: child tool events with prefixed ids, usage marked subagent, no child text
    ids = [e.id for e in events if isinstance(e, (ToolDispatch, ToolResult))]
    assert "t1/c1" in ids
    assert [e.source for e in events if isinstance(e, Usage)] == [
        "executor",
        "subagent",
        "subagent",
        "executor",
    ]
    text = "".join(e.text for e in events if isinstance(e, Text))
    assert "child thinking" not in text and "delegating" in text


def test_child_step_budget() -> None:
    assert child_steps(3, 40) == 3
    assert child_steps(None, 40) == 20
    assert child_steps(None, 6) == 5
    assert child_steps(None, None) is None
    with pytest.raises(ValueError):
        child_steps(0, 10)


def test_task_child_budget_exhaustion_is_error_result(session: Session) -> None:
    p = Scripted(
        [
            reply("", call("task", {"prompt": "loop", "max_steps": 1}, "t1")),
            reply("", call("lookup", {"key": "a"}, "c1")),
            reply("", call("lookup", {"key": "b"}, "c2")),  # grace step still calls tools
            reply("the child failed"),
        ]
    )
    agent = Agent(p, [lookup, task_tool()], session)
    assert agent.run_sync("x") == "the child failed"
    res = of_type(session, "tool/result")[0]["data"]["message"]
    assert res["isError"] and "MaxStepsExceeded" in res["content"]


def test_run_subagent_returns_last_answer_or_errors() -> None:
    import asyncio

    from foldlog import ToolRegistry

    s = Session(system="child")
    out = asyncio.run(run_subagent(Scripted([reply("answer")]), ToolRegistry(), s, "q", None, None))
    assert out == "answer"
    with pytest.raises(FoldlogError, match="without producing a final answer"):
        asyncio.run(run_subagent(Scripted([reply("  ")]), ToolRegistry(), Session(), "q", None, None))


def test_nested_sink_filters() -> None:
    got: list[Any] = []
    sink = NestedSink(got.append, "p")
    sink(Text("secret"))
    sink(ToolDispatch("c", "n"))
    sink(Usage(1, 2))
    assert got == [ToolDispatch("p/c", "n"), Usage(1, 2, source="subagent")]
