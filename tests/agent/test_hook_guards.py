"""Hooks cannot be bypassed (issue 14, deliverable 5; rules in docs/hooks.md).

For every waterfall hook point the first listener is one of three kinds, and a *guard* that
refuses is registered after it:

- ``passes``: calls ``next()`` — the guard is reached and its refusal holds;
- ``silent``: returns nothing without calling ``next()`` (a logger that forgot to pass on) — a
  refusal naming it: the guard is not reached, and neither is the guarded call;
- ``decides``: returns a decision without calling ``next()`` — the guard is not reached and the
  decision holds (an explicit verdict is the only way past a later guard).

The serial points (``turn_stopping``, ``status``, session subscribers) have no ``next``: every
listener is always reached.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from agent_helpers import call, of_type, reply

from foldlog import Agent, HookRefused, InvalidHookError, Session, tool
from foldlog.errors import APIError
from foldlog.hooks import (
    RAISE,
    RETRY,
    Allow,
    ToolOutcome,
    accept,
    allow,
    ask,
    block,
    deny,
    enter,
    reject,
)
from foldlog.providers import Scripted
from foldlog.providers.base import Request
from foldlog.subagent import task_tool

KINDS = ("passes", "silent", "decides")


@dataclass
class Run:
    """What one run showed: listeners reached, whether the guarded call happened, the outcome."""

    seen: list[str] = field(default_factory=list)
    tool_runs: int = 0
    provider: Scripted | None = None
    answer: str | None = None
    error: BaseException | None = None


def first_listener(kind: str, run: Run, decision: Any) -> Callable[..., Any]:
    if kind == "passes":

        async def passes(ctx: Any, next: Any) -> Any:
            run.seen.append("first")
            return await next()

        return passes
    if kind == "silent":

        async def silent(ctx: Any, next: Any) -> Any:
            run.seen.append("first")  # a logger that forgot to pass on

        return silent

    async def decides(ctx: Any, next: Any) -> Any:
        run.seen.append("first")
        return decision

    return decides


def guard_listener(run: Run, verdict: Any) -> Callable[..., Any]:
    async def guard(ctx: Any, next: Any) -> Any:
        run.seen.append("guard")
        return verdict

    return guard


def turn_end(session: Session) -> dict[str, Any]:
    return dict(of_type(session, "turn/end")[-1]["data"]["reason"])


def results(session: Session) -> list[dict[str, Any]]:
    return [dict(e["data"]["message"]) for e in of_type(session, "tool/result")]


def make_probe(run: Run) -> Any:
    @tool
    def probe(x: int) -> str:
        """A tool whose running the test observes."""
        run.tool_runs += 1
        return f"ran {x}"

    return probe


def run_agent(agent: Agent, run: Run, prompt: str = "go") -> None:
    try:
        run.answer = agent.run_sync(prompt)
    except Exception as e:
        run.error = e


# --- model-call points: the turn ends blocked, naming the listener ---------------------------


MODEL_POINTS = {
    # point: (the guard's refusal, a first listener's explicit decision that lets the call happen)
    "pre_step": (reject("guard says no"), "enter"),
    "request": (reject("guard says no"), "params"),
    "llm_stream": (reject("guard says no"), "stream"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("point", sorted(MODEL_POINTS))
def test_model_call_points_reach_the_guard_unless_a_listener_decided(
    session: Session, point: str, kind: str
) -> None:
    run = Run(provider=Scripted([reply("answer")]))
    p = run.provider
    assert p is not None
    agent = Agent(p, [], session)
    verdict, decision_kind = MODEL_POINTS[point]

    def explicit_decision() -> Any:
        if decision_kind == "enter":
            return enter(["go"])
        if decision_kind == "params":
            return {"model": "m", "max_tokens": None, "temperature": None}
        return p.stream(Request(messages=[{"role": "user", "content": "go"}]))

    hooks = getattr(agent.hooks, point)
    hooks(first_listener(kind, run, explicit_decision() if kind == "decides" else None))
    hooks(guard_listener(run, verdict))
    run_agent(agent, run)

    assert run.error is None, run.error
    end = turn_end(session)
    if kind == "passes":
        assert run.seen == ["first", "guard"]
        assert p.calls == 0 and end["kind"] == "blocked" and "guard says no" in end["message"]
    elif kind == "silent":
        # the silent listener refused: the guard is not reached, and neither is the model
        assert run.seen == ["first"]
        assert p.calls == 0 and end["kind"] == "blocked"
        assert end["hook"] == point and end["listener"].endswith("silent")
        assert "silent returned without calling next()" in end["message"]
    else:
        assert run.seen == ["first"]
        assert p.calls == 1 and end["kind"] == "completed" and run.answer == "answer"
    # the log stays well formed: a blocked step is closed before the turn ends
    kinds = [e["type"] for e in session.events]
    assert kinds.count("step/start") == kinds.count("step/end")


def test_blocked_request_logs_the_claimed_input_and_closes_the_step(session: Session) -> None:
    p = Scripted([reply("never")])
    agent = Agent(p, [], session)
    agent.hooks.request(lambda ctx, next: None)
    assert agent.run_sync("hello") == ""
    kinds = [e["type"] for e in session.events[1:]]
    assert kinds == ["turn/start", "step/start", "user/message", "step/end", "turn/end"]
    assert p.calls == 0


def test_a_wrapper_returning_nothing_after_a_refused_next_lets_the_refusal_stand(session: Session) -> None:
    p = Scripted([reply("never")])
    agent = Agent(p, [], session)
    caught: list[str] = []

    @agent.hooks.llm_stream
    async def wrapper(ctx: Any, next: Any) -> Any:
        try:
            return await next()
        except HookRefused as r:
            caught.append(r.listener)  # noted, not overridden: nothing is returned

    @agent.hooks.llm_stream
    async def inner(ctx: Any, next: Any) -> Any:
        return None

    agent.run_sync("x")
    assert caught and caught[0].endswith("inner")
    end = turn_end(session)
    assert end["kind"] == "blocked" and end["listener"].endswith("inner")
    assert p.calls == 0


def test_an_outer_listener_sees_the_inner_guards_decision(session: Session) -> None:
    p = Scripted([reply("ok")])
    agent = Agent(p, [], session)
    got: list[Any] = []

    @agent.hooks.pre_step
    async def outer(ctx: Any, next: Any) -> Any:
        got.append(await next())
        return None  # nothing after next(): the inner decision stands

    agent.hooks.pre_step(lambda ctx, next: reject("inner says no"))
    agent.run_sync("x")
    assert type(got[0]).__name__ == "Reject"
    assert turn_end(session) == {"kind": "blocked", "message": "inner says no"}


# --- request_error: a refusal lets the error stand ------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_request_error_guard_is_reached_unless_a_listener_decided(session: Session, kind: str) -> None:
    run = Run(provider=Scripted([APIError("busy", status=503), reply("fine")]))
    p = run.provider
    assert p is not None
    agent = Agent(p, [], session)
    agent.hooks.request_error(first_listener(kind, run, RETRY))
    agent.hooks.request_error(guard_listener(run, RAISE))
    run_agent(agent, run)
    if kind == "decides":
        assert run.seen == ["first"] and p.calls == 2 and run.answer == "fine"
        return
    # passes: the guard said raise; silent: the refusal lets the error stand (no retry)
    assert run.seen == (["first", "guard"] if kind == "passes" else ["first"])
    assert isinstance(run.error, APIError) and p.calls == 1
    assert turn_end(session)["kind"] == "error"


# --- tool points: the call becomes an error result naming the listener ----------------------


TOOL_POINTS = {
    # point: (the guard's refusal, a first listener's explicit decision letting the tool run)
    "tool_pre_execute": (deny("guard says no"), allow()),
    "tool_execute": (ToolOutcome("error: sandbox refused", True), None),
    "tool_post_execute": (block("guard says no"), accept()),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("point", sorted(TOOL_POINTS))
def test_tool_points_reach_the_guard_unless_a_listener_decided(
    session: Session, point: str, kind: str
) -> None:
    run = Run()
    probe = make_probe(run)
    p = Scripted([reply("", call("probe", {"x": 1}, "c1")), reply("done")])
    agent = Agent(p, [probe], session)
    verdict, decision = TOOL_POINTS[point]
    if point == "tool_execute" and kind == "decides":
        decision = ToolOutcome("answered by the hook")  # the tool is replaced, not run
    hooks = getattr(agent.hooks, point)
    hooks(first_listener(kind, run, decision))
    hooks(guard_listener(run, verdict))
    run_agent(agent, run)

    assert run.error is None and run.answer == "done"  # a tool refusal never ends the turn
    [res] = results(session)
    ran = run.tool_runs == 1
    if kind == "passes":
        assert run.seen == ["first", "guard"]
        assert res["isError"]
        assert ran == (point == "tool_post_execute")  # post-execute guards the result, not the call
        assert "guard says no" in res["content"] or "sandbox refused" in res["content"]
    elif kind == "silent":
        assert run.seen == ["first"]
        assert res["isError"] and "silent returned without calling next()" in res["content"]
        assert res["content"].startswith("blocked:")
        assert ran == (point == "tool_post_execute")
        if point == "tool_post_execute":
            assert "ran 1" not in res["content"]  # the result is withheld from the model
    else:
        assert run.seen == ["first"]
        if point == "tool_execute":
            assert not ran and res == {**res, "content": "answered by the hook", "isError": False}
        else:
            assert ran and res["content"] == "ran 1" and not res["isError"]


def test_tool_execute_wrapper_never_reaches_the_tool_through_a_refusing_inner_listener(
    session: Session,
) -> None:
    run = Run()
    probe = make_probe(run)
    agent = Agent(Scripted([reply("", call("probe", {"x": 1})), reply("done")]), [probe], session)
    wrapped: list[str] = []

    @agent.hooks.tool_execute
    async def timing(ctx: Any, next: Any) -> Any:
        wrapped.append("before")
        out = await next()
        wrapped.append("after")  # not reached: next() raised the refusal
        return out

    @agent.hooks.tool_execute
    def audit(ctx: Any, next: Any) -> None:
        wrapped.append("audit")  # forgot `return next()`

    agent.run_sync("go")
    assert wrapped == ["before", "audit"] and run.tool_runs == 0
    [res] = results(session)
    assert res["isError"] and "tool_execute hook" in res["content"] and "audit" in res["content"]


def test_ask_after_next_keeps_the_later_guards(session: Session) -> None:
    run = Run()
    probe = make_probe(run)
    p = Scripted([reply("", call("probe", {"x": 1}, "a"), call("probe", {"x": 2}, "b")), reply("done")])
    agent = Agent(p, [probe], session)
    questions: list[str] = []

    def approver(ctx: Any, question: str) -> bool:
        questions.append(question)
        return True

    agent.hooks.approver = approver

    @agent.hooks.tool_pre_execute
    async def confirm(ctx: Any, next: Any) -> Any:
        later = await next()  # the later guards first: a human cannot approve past them
        return ask(f"run probe x={ctx.arguments['x']}?") if isinstance(later, Allow) else later

    @agent.hooks.tool_pre_execute
    async def sandbox(ctx: Any, next: Any) -> Any:
        return deny("x=2 is outside the sandbox") if ctx.arguments["x"] == 2 else await next()

    agent.run_sync("go")
    a, b = results(session)
    assert a["content"] == "ran 1" and b["isError"] and "outside the sandbox" in b["content"]
    assert run.tool_runs == 1 and questions == ["run probe x=1?"]


# --- serial points: every listener is reached ------------------------------------------------


def test_turn_stopping_status_and_subscribers_always_reach_every_listener(
    session: Session, caplog: pytest.LogCaptureFixture
) -> None:
    agent = Agent(Scripted([reply("ok")]), [], session)
    seen: list[str] = []

    agent.hooks.turn_stopping(lambda ctx: seen.append("stop-1"))  # returns None: nothing cut
    agent.hooks.turn_stopping(lambda ctx: seen.append("stop-2"))

    def broken_status(status: str) -> None:
        raise RuntimeError("status listener down")

    agent.hooks.status(broken_status)
    agent.hooks.status(lambda status: seen.append(f"status-{status}"))

    def broken_subscriber(ev: Any) -> None:
        raise RuntimeError("subscriber down")

    agent.subscribe(broken_subscriber)
    agent.subscribe(lambda ev: seen.append("event") if ev["type"] == "turn/end" else None)
    with caplog.at_level(logging.ERROR):
        assert agent.run_sync("x") == "ok"
    assert seen == ["status-running", "stop-1", "stop-2", "event", "status-idle"]


# --- registration and sub-agents -------------------------------------------------------------


@pytest.mark.parametrize(
    "point",
    [
        "pre_step",
        "request",
        "request_error",
        "llm_stream",
        "tool_pre_execute",
        "tool_execute",
        "tool_post_execute",
    ],
)
def test_a_listener_without_next_is_refused_at_registration(point: str) -> None:
    agent = Agent(Scripted([]), [])

    def policy(ctx: Any) -> Any:
        return allow()

    with pytest.raises(
        InvalidHookError, match=rf"{point} listener .*policy.* must take \(ctx, next\)"
    ) as info:
        getattr(agent.hooks, point)(policy)
    assert isinstance(info.value, TypeError)
    assert getattr(agent.hooks, f"{point}_hooks") == []


def test_a_sub_agent_runs_under_its_parents_tool_policies(session: Session) -> None:
    run = Run()
    probe = make_probe(run)
    p = Scripted(
        [
            reply("", call("task", {"prompt": "run probe with x=7"}, "t1")),  # parent delegates
            reply("", call("probe", {"x": 7}, "c1")),  # the child calls the tool
            reply("the probe was refused"),  # the child's answer
            reply("done"),  # the parent's answer
        ]
    )
    agent = Agent(p, [probe, task_tool()], session)
    refused: list[str] = []

    @agent.hooks.tool_pre_execute
    async def sandbox(ctx: Any, next: Any) -> Any:
        if ctx.call.name == "probe":
            refused.append(ctx.call.id)
            return deny("probe is not allowed")
        return await next()

    assert agent.run_sync("go") == "done"
    assert refused == ["c1"] and run.tool_runs == 0
    child_result = p.requests[2].messages[-1]
    assert child_result["role"] == "tool" and "probe is not allowed" in child_result["content"]


# --- compaction: a summary call is a provider stream too ------------------------------------


def _compacting_agent(policy: Callable[..., Any]) -> tuple[Agent, Scripted, list[Any]]:
    import asyncio

    from foldlog import Options

    s = Session(system="You summarise.")
    for i in range(6):
        s.add({"role": "user", "content": f"question {i}: " + "words " * 300})
        s.add({"role": "assistant", "content": f"answer {i}: " + "more " * 300})
    summarizer = Scripted([{"content": "## Goal\n- answer questions"}] * 2)
    events: list[Any] = []
    opts = Options(context_window=4000, summary_provider=summarizer, prune_min_bytes=10**9)
    agent = Agent(Scripted([]), [], s, opts, sink=events.append)
    agent.hooks.llm_stream(policy)
    asyncio.run(agent.compact())
    return agent, summarizer, events


def test_compaction_summary_calls_pass_through_the_llm_stream_hooks() -> None:
    from foldlog.events import CompactionDone

    purposes: list[str] = []

    async def recorder(ctx: Any, next: Any) -> Any:
        purposes.append(ctx.purpose)
        return await next()

    _, summarizer, events = _compacting_agent(recorder)
    assert purposes == ["compaction"] and summarizer.calls == 1
    [done] = [e for e in events if isinstance(e, CompactionDone)]
    assert not done.mechanical

    async def no_summaries(ctx: Any, next: Any) -> Any:
        if ctx.purpose != "compaction":
            return await next()  # the policy refuses only summary calls (nothing returned below)

    _, summarizer, events = _compacting_agent(no_summaries)
    assert summarizer.calls == 0  # refused: the summariser never saw a request
    [done] = [e for e in events if isinstance(e, CompactionDone)]
    assert done.mechanical  # the fold still happens, mechanically
