from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from foldlog import Agent, RunCancelled, Session, tool
from foldlog.events import Text, TurnDone
from foldlog.hooks import ToolContext
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, of_type, reply, types


def _assert_closed_validly(session: Session) -> None:
    """Every call has a result, steps and turns are closed: the log can be continued."""
    calls = [e["data"]["callId"] for e in of_type(session, "tool/call")]
    results = [e["data"]["message"]["toolCallId"] for e in of_type(session, "tool/result")]
    assert calls == results
    assert len(of_type(session, "step/start")) == len(of_type(session, "step/end"))
    assert len(of_type(session, "turn/start")) == len(of_type(session, "turn/end"))


def test_cancel_while_streaming_keeps_partial_text(session: Session) -> None:
    events: list[Any] = []
    agent: Agent

    def sink(ev: Any) -> None:
        events.append(ev)
        if isinstance(ev, Text) and sum(isinstance(e, Text) for e in events) == 3:
            agent.cancel()

    p = Scripted([reply("Hello there, partial", hang=True), reply("resumed")])
    agent = Agent(p, [], session, sink=sink)
    with pytest.raises(RunCancelled):
        agent.run_sync("talk")
    msg = of_type(session, "assistant/message")[-1]["data"]
    assert msg["interrupted"] is True and msg["message"]["content"] == "Hello there, partial"
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "aborted"
    assert isinstance(events[-1], TurnDone) and events[-1].reason == "aborted"
    _assert_closed_validly(session)
    # the next run continues from the log
    assert agent.run_sync("go on") == "resumed"
    assert p.requests[1].messages[-2] == {"role": "assistant", "content": "Hello there, partial"}


def test_cancel_while_tools_run(session: Session) -> None:
    @tool
    async def block_forever(ctx: ToolContext) -> str:
        assert ctx.agent is not None
        ctx.agent.cancel()
        await asyncio.Event().wait()
        return "never"

    @tool
    def later() -> str:
        return "never either"

    p = Scripted([reply("", call("block_forever", "{}", "a"), call("later", "{}", "b"))])
    agent = Agent(p, [block_forever, later], session)
    with pytest.raises(RunCancelled):
        agent.run_sync("x")
    res = [e["data"]["message"] for e in of_type(session, "tool/result")]
    assert [r["toolCallId"] for r in res] == ["a", "b"]
    assert res[0]["content"] == "error: cancelled during execution" and res[0]["isError"]
    assert res[1]["content"] == "error: cancelled before execution" and res[1]["isError"]
    assert types(session)[-2:] == ["step/end", "turn/end"]
    _assert_closed_validly(session)


def test_completed_results_survive_cancellation(session: Session) -> None:
    @tool(read_only=True)
    def quick() -> str:
        return "quick result"

    @tool
    async def stop(ctx: ToolContext) -> str:
        assert ctx.agent is not None
        ctx.agent.cancel()
        await asyncio.sleep(10)
        return ""

    p = Scripted([reply("", call("quick", "{}", "q"), call("stop", "{}", "s"))])
    with pytest.raises(RunCancelled):
        Agent(p, [quick, stop], session).run_sync("x")
    res = [e["data"]["message"]["content"] for e in of_type(session, "tool/result")]
    assert res == ["quick result", "error: cancelled during execution"]


def test_task_cancellation_aborts_and_propagates(session: Session) -> None:
    async def main() -> None:
        agent = Agent(Scripted([reply("abc", hang=True)]), [], session)
        task = asyncio.create_task(agent.run("x"))
        while not of_type(session, "request/header"):
            await asyncio.sleep(0.001)
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not agent.running

    asyncio.run(main())
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "aborted"
    assert of_type(session, "assistant/message")[-1]["data"]["interrupted"] is True
    _assert_closed_validly(session)


def test_cancel_from_another_thread(session: Session) -> None:
    started = threading.Event()

    def hang(req: Any) -> Any:
        started.set()
        return reply("", hang=True)

    agent = Agent(Scripted([hang]), [], session)
    t = threading.Thread(target=lambda: (started.wait(5), agent.cancel()))
    t.start()
    with pytest.raises(RunCancelled):
        agent.run_sync("x")
    t.join()
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "aborted"
    # nothing streamed: no interrupted assistant message is invented
    assert of_type(session, "assistant/message") == []


def test_cancel_when_idle_is_a_no_op(session: Session) -> None:
    agent = Agent(Scripted([reply("ok")]), [], session)
    assert agent.cancel() is False
    assert agent.run_sync("x") == "ok"


def test_sigterm_to_a_library_run_through_the_documented_handler(session: Session) -> None:
    """A library user's own SIGTERM handler: ``loop.add_signal_handler(SIGTERM, agent.cancel)``
    (docs/hooks.md, "Cancelling a run") behaves as Ctrl-C does in the CLI: partial text logged,
    the turn ``aborted``, ``run`` raises `RunCancelled`. A real signal, sent to this process."""
    import os
    import signal

    agent: Agent
    texts: list[str] = []

    def sink(ev: Any) -> None:
        if isinstance(ev, Text):
            texts.append(ev.text)
            if len(texts) == 3:  # mid-stream
                os.kill(os.getpid(), signal.SIGTERM)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, agent.cancel)
        try:
            await agent.run("talk")
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    agent = Agent(Scripted([reply("Hello there, partial", hang=True)]), [], session, sink=sink)
    with pytest.raises(RunCancelled):
        asyncio.run(main())
    msg = of_type(session, "assistant/message")[-1]["data"]
    assert msg["interrupted"] is True and msg["message"]["content"] == "".join(texts)
    assert msg["message"]["content"].startswith("Hello")
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "aborted"
    _assert_closed_validly(session)
