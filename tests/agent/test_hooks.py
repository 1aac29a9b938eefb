from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agent_helpers import call, of_type, reply, types

from foldlog import Agent, HookError, Session, tool
from foldlog.errors import APIError
from foldlog.hooks import (
    RETRY,
    PreStepContext,
    allow,
    ask,
    block,
    deny,
    enter,
    reject,
    replace,
)
from foldlog.providers import Scripted
from foldlog.providers.base import TextDelta


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo the text."""
    return text


def test_pre_step_waterfall_order_and_rewrite(session: Session) -> None:
    order: list[str] = []
    p = Scripted([reply("ok")])
    agent = Agent(p, [], session)

    @agent.hooks.pre_step
    async def first(ctx: PreStepContext, next: Any) -> Any:
        order.append("first>")
        out = await next()
        order.append("<first")
        return out

    @agent.hooks.pre_step
    async def second(ctx: PreStepContext, next: Any) -> Any:
        order.append("second")
        return enter([{"role": "user", "content": ctx.messages[0]["content"].upper()}])

    assert agent.run_sync("hello") == "ok"
    assert order == ["first>", "second", "<first"]
    assert p.requests[0].messages[-1] == {"role": "user", "content": "HELLO"}


def test_pre_step_reject_blocks_turn_without_steps(session: Session) -> None:
    p = Scripted([])
    agent = Agent(p, [], session)
    agent.hooks.pre_step(lambda ctx, next: reject("not allowed here"))
    assert agent.run_sync("rm -rf") == ""
    assert types(session, 1) == ["turn/start", "turn/end"]
    assert of_type(session, "turn/end")[0]["data"]["reason"] == {
        "kind": "blocked",
        "message": "not allowed here",
    }
    assert p.calls == 0


def test_pre_step_not_calling_next_cuts_chain(session: Session) -> None:
    seen: list[str] = []
    agent = Agent(Scripted([reply("ok")]), [], session)
    agent.hooks.pre_step(lambda ctx, next: seen.append("a"))
    agent.hooks.pre_step(lambda ctx, next: seen.append("b"))
    agent.run_sync("x")
    assert seen == ["a"]


def test_next_is_single_use(session: Session) -> None:
    agent = Agent(Scripted([reply("ok")]), [], session)

    @agent.hooks.pre_step
    async def twice(ctx: Any, next: Any) -> Any:
        await next()
        return await next()

    with pytest.raises(HookError, match="twice"):
        agent.run_sync("x")
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "error"


def test_hook_exception_ends_turn_error(session: Session) -> None:
    agent = Agent(Scripted([reply("ok")]), [], session)

    @agent.hooks.request
    def broken(ctx: Any, next: Any) -> Any:
        raise KeyError("oops")

    with pytest.raises(HookError, match="request hook raised KeyError"):
        agent.run_sync("x")
    assert types(session)[-2:] == ["step/end", "turn/end"]


def test_request_hook_changes_params_not_messages(session: Session) -> None:
    p = Scripted([reply("ok")])
    agent = Agent(p, [], session)

    @agent.hooks.request
    async def params(ctx: Any, next: Any) -> Any:
        out = await next()
        out["model"] = "bigger"
        out["temperature"] = 0.2
        out["top_p"] = 0.9
        ctx.messages = ()  # has no effect: requests always carry the session's messages
        return out

    agent.run_sync("x")
    req = p.requests[0]
    assert (req.model, req.temperature, dict(req.params)) == ("bigger", 0.2, {"top_p": 0.9})
    assert list(req.messages) == list(session.wire_messages())[:2]
    assert of_type(session, "request/header")[0]["data"]["model"] == "bigger"


def test_request_error_retry(session: Session) -> None:
    p = Scripted([APIError("busy", status=503), reply("fine")])
    agent = Agent(p, [], session)
    attempts: list[int] = []

    @agent.hooks.request_error
    def retry_once(ctx: Any, next: Any) -> Any:
        attempts.append(ctx.attempt)
        return RETRY if ctx.attempt < 2 else None

    assert agent.run_sync("x") == "fine"
    assert attempts == [1]
    assert len(of_type(session, "step/start")) == 1


def test_request_error_default_lets_error_stand(session: Session) -> None:
    agent = Agent(Scripted([APIError("bad", status=400)]), [], session)
    agent.hooks.request_error(lambda ctx, next: next())
    with pytest.raises(APIError):
        agent.run_sync("x")


def test_turn_stopping_can_queue_more_work(session: Session) -> None:
    p = Scripted([reply("draft"), reply("final")])
    agent = Agent(p, [], session)
    calls: list[str] = []

    @agent.hooks.turn_stopping
    def review(ctx: Any) -> None:
        calls.append(ctx.answer)
        if ctx.answer == "draft":
            ctx.agent.steer("please polish it")

    assert agent.run_sync("write") == "final"
    assert calls == ["draft", "final"]
    assert len(of_type(session, "turn/start")) == 1 and len(of_type(session, "step/start")) == 2


def test_status_notifications(session: Session) -> None:
    statuses: list[str] = []
    agent = Agent(Scripted([reply("ok"), APIError("x")]), [], session)
    agent.hooks.status(statuses.append)
    agent.run_sync("x")
    with pytest.raises(APIError):
        agent.run_sync("y")
    assert statuses == ["running", "idle", "running", "idle"]


def test_tool_pre_execute_allow_deny_ask(session: Session) -> None:
    @tool
    def danger(x: int) -> str:
        return f"did {x}"

    p = Scripted(
        [
            reply(
                "",
                call("danger", {"x": 1}, "a"),
                call("danger", {"x": 2}, "b"),
                call("danger", {"x": 3}, "c"),
                call("danger", {"x": 4}, "d"),
            ),
            reply("done"),
        ]
    )
    agent = Agent(p, [danger], session)

    @agent.hooks.tool_pre_execute
    def policy(ctx: Any, next: Any) -> Any:
        x = ctx.arguments["x"]
        return {1: allow(), 2: deny("x=2 is forbidden"), 3: ask("run x=3?"), 4: ask("run x=4?")}[x]

    agent.hooks.approver = lambda ctx, q: ctx.arguments["x"] == 3
    agent.run_sync("go")
    out = [
        (e["data"]["message"]["content"], e["data"]["message"]["isError"])
        for e in of_type(session, "tool/result")
    ]
    assert out[0] == ("did 1", False)
    assert out[1][1] and out[1][0].startswith("blocked:") and "x=2 is forbidden" in out[1][0]
    assert out[2] == ("did 3", False)
    assert out[3][1] and "not approved" in out[3][0]


def test_tool_execute_waterfall_and_post_execute(session: Session) -> None:
    order: list[str] = []
    p = Scripted(
        [
            reply(
                "",
                call("echo", {"text": "a"}, "1"),
                call("echo", {"text": "secret"}, "2"),
                call("echo", {"text": "c"}, "3"),
            ),
            reply("ok"),
        ]
    )
    agent = Agent(p, [echo], session)

    @agent.hooks.tool_execute
    async def outer(ctx: Any, next: Any) -> Any:
        order.append(f"outer>{ctx.arguments['text']}")
        res = await next()
        res.content = f"[{res.content}]"
        return res

    @agent.hooks.tool_post_execute
    def post(ctx: Any, next: Any) -> Any:
        if "secret" in ctx.result.content:
            return block("contains a secret")
        if ctx.result.content == "[c]":
            return replace("C!")
        return next()

    agent.run_sync("go")
    out = [e["data"]["message"]["content"] for e in of_type(session, "tool/result")]
    assert out[0] == "[a]" and out[1].startswith("blocked:") and out[2] == "C!"
    assert sorted(order) == ["outer>a", "outer>c", "outer>secret"]


def test_tool_hook_error_becomes_error_result(session: Session) -> None:
    p = Scripted([reply("", call("echo", {"text": "a"})), reply("ok")])
    agent = Agent(p, [echo], session)

    @agent.hooks.tool_pre_execute
    def broken(ctx: Any, next: Any) -> Any:
        raise RuntimeError("policy server down")

    assert agent.run_sync("go") == "ok"
    res = of_type(session, "tool/result")[0]["data"]["message"]
    assert res["isError"] and "policy server down" in res["content"]


def test_llm_stream_waterfall_wraps_stream(session: Session) -> None:
    p = Scripted([reply("hello")])
    agent = Agent(p, [], session)
    seen: list[str] = []

    @agent.hooks.llm_stream
    async def shout(ctx: Any, next: Any) -> AsyncIterator[Any]:
        inner = await next()
        seen.append(type(ctx.request).__name__)

        async def gen() -> AsyncIterator[Any]:
            async for chunk in inner:
                yield TextDelta(chunk.text.upper()) if chunk.kind == "text" else chunk

        return gen()

    assert agent.run_sync("x") == "HELLO"
    assert seen == ["Request"]


def test_session_subscribers_see_each_event(session: Session) -> None:
    got: list[str] = []
    agent = Agent(Scripted([reply("ok")]), [], session)
    unsubscribe = agent.subscribe(lambda ev: got.append(ev["type"]))
    agent.run_sync("x")
    assert got == types(session, 1)
    unsubscribe()
    agent.provider.add(reply("again"))  # type: ignore[attr-defined]
    agent.run_sync("y")
    assert len(got) < len(session.events) - 1


def test_async_hooks_and_decorator_return_fn(session: Session) -> None:
    agent = Agent(Scripted([reply("ok")]), [], session)

    async def hook(ctx: Any, next: Any) -> Any:
        await asyncio.sleep(0)
        return await next()

    assert agent.hooks.pre_step(hook) is hook
    assert agent.run_sync("x") == "ok"
