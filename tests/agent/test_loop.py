from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from foldlog import Agent, MaxStepsExceeded, Options, Session, tool
from foldlog.errors import APIError, ProviderError, StreamInterrupted
from foldlog.events import Retrying, Text, ToolDispatch, ToolResult, TurnDone, TurnStarted, Usage
from foldlog.log.frozen import thaw
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, checked, of_type, reply, types


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_lifecycle_order_and_request_invariant(session: Session) -> None:
    p = Scripted([])
    p.add(
        checked(session, reply("adding", call("add", {"a": 1, "b": 2}, "c1"), reasoning_content="think")),
        checked(session, reply("3")),
    )
    events: list[Any] = []
    agent = Agent(p, [add], session, Options(), events.append)
    assert agent.run_sync("1+2?") == "3"
    assert types(session, 1) == [
        "turn/start",
        "step/start",
        "user/message",
        "request/header",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    a1 = of_type(session, "assistant/message")[0]["data"]
    assert a1["turn"] == 1 and a1["step"] == 1
    assert a1["message"]["reasoning_content"] == "think"
    assert thaw(a1["message"]["tool_calls"]) == [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}
    ]
    assert a1["usage"]["promptTokens"] == 100
    res = of_type(session, "tool/result")[0]
    assert res["data"]["message"] == {
        "role": "tool",
        "toolCallId": "c1",
        "toolName": "add",
        "content": "3",
        "isError": False,
    }
    assert list(res["sourceEventSeqs"]) == [of_type(session, "tool/call")[0]["seq"]]
    assert of_type(session, "turn/end")[0]["data"]["reason"] == {"kind": "completed"}
    # the second request carries the tool result; tools are sent sorted and stable
    assert p.requests[1].messages[-1]["role"] == "tool"
    assert p.requests[0].tools == p.requests[1].tools
    kinds = [type(e) for e in events]
    assert kinds[0] is TurnStarted and kinds[-1] is TurnDone
    assert ToolDispatch in kinds and ToolResult in kinds and Usage in kinds
    assert "".join(e.text for e in events if isinstance(e, Text)) == "adding3"
    # partial dispatch (name streamed in) precedes the full one
    dispatch = [e for e in events if isinstance(e, ToolDispatch)]
    assert dispatch[0].partial and not dispatch[1].partial and dispatch[1].arguments


def test_flush_before_each_request_and_after_each_tool_batch(session: Session) -> None:
    log: list[str] = []
    real_flush = session.flush

    def flush() -> None:
        log.append("flush")
        real_flush()

    session.flush = flush  # type: ignore[method-assign]

    def r(x: Any) -> Any:
        def fn(req: Any) -> Any:
            log.append("request")
            return x

        return fn

    @tool
    def mark() -> str:
        log.append("tool")
        return "ok"

    agent = Agent(Scripted([r(reply("", call("mark"))), r(reply("done"))]), [mark], session)
    agent.run_sync("go")
    # write-ahead (docs/durable-runs.md): a tool that is not read_only runs only after its call is
    # stored, and its result is stored as soon as it is final (then the batch's own flush)
    assert log[:6] == ["flush", "request", "flush", "tool", "flush", "flush"]
    assert log[6:8] == ["flush", "request"]


def test_debug_invariant_mode(session: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FOLDLOG_DEBUG", "1")
    assert Options().check_invariants
    agent = Agent(Scripted([reply("", call("add", {"a": 1, "b": 1})), reply("2")]), [add], session)
    assert agent.run_sync("x") == "2"


def test_header_logged_once_and_on_change(session: Session) -> None:
    agent = Agent(
        Scripted([reply("", call("add", {"a": 1, "b": 1})), reply("2"), reply("again")]), [add], session
    )
    agent.run_sync("x")
    agent.run_sync("y")
    assert len(of_type(session, "request/header")) == 1
    agent.options.temperature = 0.5
    agent.provider.add(reply("z"))  # type: ignore[attr-defined]
    agent.run_sync("z")
    headers = of_type(session, "request/header")
    assert len(headers) == 2 and headers[1]["data"]["model"] == "scripted"


def test_max_steps_grace_step_answers(session: Session) -> None:
    p = Scripted([reply("", call("add", {"a": 1, "b": 1}, f"c{i}")) for i in range(2)] + [reply("final")])
    agent = Agent(p, [add], session, Options(max_steps=2))
    assert agent.run_sync("loop") == "final"
    assert p.requests[2].tools == ()  # the grace step offers no tools
    assert p.requests[2].messages[-1]["role"] == "user"
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"


def test_max_steps_exceeded_after_grace(session: Session) -> None:
    p = Scripted([reply("", call("add", {"a": 1, "b": 1}, f"c{i}")) for i in range(3)])
    agent = Agent(p, [add], session, Options(max_steps=2))
    with pytest.raises(MaxStepsExceeded):
        agent.run_sync("loop")
    end = of_type(session, "turn/end")[-1]["data"]["reason"]
    assert end["kind"] == "max-steps"
    # every call got a result, so the log stays valid to continue
    calls = {e["data"]["callId"] for e in of_type(session, "tool/call")}
    results = {e["data"]["message"]["toolCallId"] for e in of_type(session, "tool/result")}
    assert calls == results
    assert "not executed" in of_type(session, "tool/result")[-1]["data"]["message"]["content"]


def test_max_steps_without_grace(session: Session) -> None:
    p = Scripted([reply("", call("add", {"a": 1, "b": 1}))])
    agent = Agent(p, [add], session, Options(max_steps=1, grace_step=False))
    with pytest.raises(MaxStepsExceeded):
        agent.run_sync("loop")
    assert p.calls == 1


def test_max_tokens_drops_calls_keeps_usage(session: Session) -> None:
    p = Scripted([reply("", call("add", '{"a": 1'), finish_reason="length")])
    agent = Agent(p, [add], session)
    assert agent.run_sync("long") == ""
    msg = of_type(session, "assistant/message")[-1]["data"]
    assert "tool_calls" not in msg["message"] and msg["usage"]["completionTokens"] == 10
    assert of_type(session, "tool/call") == []
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "max-tokens"
    assert all(m["role"] != "assistant" for m in session.derive_messages())


def test_stream_interrupted_keeps_partial_and_continues(session: Session) -> None:
    events: list[Any] = []
    p = Scripted(
        [
            reply("partial ans", raise_after=StreamInterrupted("cut", partial_text="partial ans")),
            reply("complete answer"),
        ]
    )
    agent = Agent(p, [], session, Options(max_steps=1), events.append)
    assert agent.run_sync("q") == "complete answer"
    msgs = of_type(session, "assistant/message")
    assert msgs[0]["data"]["interrupted"] is True and msgs[0]["data"]["message"]["content"] == "partial ans"
    users = of_type(session, "user/message")
    assert users[-1]["data"]["source"] == "continue"
    assert len(of_type(session, "step/start")) == 1  # not counted as a step
    assert any(isinstance(e, Retrying) for e in events)
    assert p.requests[1].messages[-2] == {"role": "assistant", "content": "partial ans"}


def test_stream_interrupted_gives_up_after_three(session: Session) -> None:
    p = Scripted([reply("x", raise_after=StreamInterrupted("cut")) for _ in range(4)])
    agent = Agent(p, [], session)
    with pytest.raises(StreamInterrupted):
        agent.run_sync("q")
    assert p.calls == 4
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "error"


def test_cut_stream_without_finish_is_an_interruption(session: Session) -> None:
    def cut(req: Any) -> Any:
        return {"content": "abc", "finish_reason": "cut"}

    p = Scripted([cut, reply("ok")])
    assert Agent(p, [], session).run_sync("q") == "ok"


def test_provider_error_ends_turn_error_and_log_continues(session: Session) -> None:
    p = Scripted([APIError("boom", status=400), reply("recovered")])
    agent = Agent(p, [], session)
    with pytest.raises(APIError):
        agent.run_sync("q")
    end = of_type(session, "turn/end")[-1]["data"]
    assert end["turn"] == 1 and end["reason"]["kind"] == "error" and "boom" in end["reason"]["message"]
    assert agent.run_sync("again") == "recovered"
    assert of_type(session, "turn/start")[-1]["data"]["turn"] == 2


def test_out_of_replies_is_clear(session: Session) -> None:
    with pytest.raises(ProviderError, match="ran out of replies"):
        Agent(Scripted([]), [], session).run_sync("q")


def test_followup_during_run_opens_a_new_turn(session: Session) -> None:
    agent: Agent

    def second(req: Any) -> Any:
        agent.followup("and then?")
        return reply("first")

    agent = Agent(Scripted([second, reply("second")]), [], session)
    assert agent.run_sync("hi") == "second"
    assert [e["data"]["turn"] for e in of_type(session, "turn/end")] == [1, 2]


def test_steer_joins_next_step_inject_waits(session: Session) -> None:
    from foldlog.events import Steer

    events: list[Any] = []
    agent: Agent

    def first(req: Any) -> Any:
        agent.inject("context A")
        return reply("", call("add", {"a": 1, "b": 2}))

    def second(req: Any) -> Any:
        assert req.messages[-1]["content"] == "context A"
        agent.steer("actually, also say hi")
        return reply("3")

    def third(req: Any) -> Any:
        assert req.messages[-1]["content"] == "actually, also say hi"
        return reply("3, hi")

    agent = Agent(Scripted([first, second, third]), [add], session, sink=events.append)
    assert agent.run_sync("go") == "3, hi"
    assert len(of_type(session, "turn/start")) == 1
    assert [e.content for e in events if isinstance(e, Steer)] == ["actually, also say hi"]
    sources = [e["data"].get("source") for e in of_type(session, "user/message")]
    assert sources == [None, "inject", "steer"]


def test_inject_alone_does_not_wake() -> None:
    agent = Agent(Scripted([reply("ok")]), [], Session())
    agent.inject("background")
    with pytest.raises(ValueError, match="nothing to run"):
        agent.run_sync()
    assert agent.run_sync("now") == "ok"
    assert [m["content"] for m in agent.session.derive_messages() if m["role"] == "user"] == [
        "now",
        "background",
    ]


def test_run_rejects_reentry(session: Session) -> None:
    async def main() -> None:
        agent = Agent(Scripted([reply("a", hang=True)]), [], session)
        t = asyncio.create_task(agent.run("x"))
        await asyncio.sleep(0.01)
        with pytest.raises(RuntimeError, match="already running"):
            await agent.run("y")
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t

    asyncio.run(main())


def test_sink_errors_never_break_the_run(session: Session, caplog: pytest.LogCaptureFixture) -> None:
    def bad(event: Any) -> None:
        raise RuntimeError("sink down")

    agent = Agent(Scripted([reply("", call("add", {"a": 1, "b": 1})), reply("2")]), [add], session, sink=bad)
    assert agent.run_sync("x") == "2"
    assert sum("sink" in r.message for r in caplog.records) == 1


def test_unknown_tool_and_bad_args_reach_the_model(session: Session) -> None:
    p = Scripted(
        [
            reply(
                "", call("nope", "{}", "c1"), call("add", "{bad json", "c2"), call("add", {"a": "x"}, "c3")
            ),
            reply("sorry"),
        ]
    )
    Agent(p, [add], session).run_sync("x")
    contents = [e["data"]["message"]["content"] for e in of_type(session, "tool/result")]
    assert contents[0].startswith('error: unknown tool "nope"')
    assert "invalid JSON" in contents[1] and '"required"' in contents[1]
    assert (
        "invalid arguments" in contents[2]
        and "expected integer" in contents[2]
        and '"properties"' in contents[2]
    )
    assert all(e["data"]["message"]["isError"] for e in of_type(session, "tool/result"))


def test_every_request_carries_the_session_messages(session: Session) -> None:
    agent: Agent

    def steer_then(r: Any) -> Any:
        def fn(req: Any) -> Any:
            agent.steer("also check b")
            return r

        return fn

    script = [
        reply("", call("add", {"a": 1, "b": 2}, "c1"), call("nope", "{}", "c2")),
        reply("partial", raise_after=StreamInterrupted("cut")),
        steer_then(reply("", call("add", "{bad", "c3"))),
        reply("", call("add", {"a": 2, "b": 2}, "c4")),
        reply("final"),
    ]
    p = Scripted([checked(session, r) for r in script])
    agent = Agent(p, [add], session, Options(max_steps=3))
    assert agent.run_sync("go") == "final"
    assert p.calls == 5
    assert p.requests[-1].tools == ()  # the grace step


def test_usage_event_has_cache_rate_and_cost(session: Session) -> None:
    from foldlog.cost.prices import Price
    from foldlog.events import Reasoning

    class Priced(Scripted):  # a provider's own prices (foldlog.cost prices the reply with them)
        prices: Mapping[str, Price] = {"scripted": Price(input=2.0, output=4.0, cache_read=1.0)}

    events: list[Any] = []
    usage = {"prompt_tokens": 200, "completion_tokens": 5, "cache_hit_tokens": 150}
    p = Priced([{"content": "hi", "reasoning_content": "hmm", "usage": usage}])
    Agent(p, [], session, sink=events.append).run_sync("x")
    [u] = [e for e in events if isinstance(e, Usage)]
    assert (u.prompt_tokens, u.cache_hit_tokens, u.cache_miss_tokens, u.hit_rate) == (200, 150, 50, 0.75)
    assert u.cost == pytest.approx((50 * 2.0 + 150 * 1.0 + 5 * 4.0) / 1e6) and u.source == "executor"
    assert "".join(e.text for e in events if isinstance(e, Reasoning)) == "hmm"
