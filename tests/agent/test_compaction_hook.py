"""The agent's side of compaction: when it asks, with what, and how failures surface.

The agent's compactor is the real one, with its calls recorded (a subclass installed where the
agent takes its compactor class from), so the agent's wiring is what is under test.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from foldlog import Agent, Session, tool
from foldlog.compaction import Compactor
from foldlog.errors import CompactionError
from foldlog.events import Notice
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, of_type, reply


@tool(read_only=True)
def ping() -> str:
    return "pong"


class Recorder(Compactor):
    instances: ClassVar[list[Recorder]] = []
    fail: ClassVar[bool] = False

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.calls: list[tuple[Any, ...]] = []
        Recorder.instances.append(self)

    async def maybe_compact(self, prompt_tokens: int | None, tools: Any = ()) -> None:
        # what the log holds at this moment tells where in the step the call happened
        self.calls.append(("maybe", prompt_tokens, len(tools), self.session.events[-1]["type"]))
        if Recorder.fail:
            raise CompactionError("planner exploded")
        await super().maybe_compact(prompt_tokens, tools)

    async def compact(self, trigger: str = "manual", focus: str | None = None, force: bool = False) -> Any:
        self.calls.append(("compact", trigger, focus, force))
        return await super().compact(trigger, focus, force)


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> type[Recorder]:
    monkeypatch.setattr("foldlog.agent.loop.Compactor", Recorder)
    Recorder.instances = []
    Recorder.fail = False
    return Recorder


def test_maybe_compact_after_each_batch_and_before_answer(session: Session, recorder: type[Recorder]) -> None:
    p = Scripted(
        [reply("", call("ping")), {"content": "done", "usage": {"prompt_tokens": 777}}], context_window=1000
    )
    agent = Agent(p, [ping], session)
    agent.run_sync("x")
    [c] = recorder.instances
    assert c.settings.window == 1000  # taken from the provider when Options leaves it unset
    assert c.calls == [("maybe", 100, 1, "step/end"), ("maybe", 777, 1, "step/end")]
    assert of_type(session, "turn/end")  # the turn closed after the last check
    asyncio.run(agent.compact("keep the auth bug"))
    assert c.calls[-1] == ("compact", "manual", "keep the auth bug", True)


def test_compaction_failure_is_a_notice(session: Session, recorder: type[Recorder]) -> None:
    recorder.fail = True
    events: list[Any] = []
    agent = Agent(Scripted([reply("", call("ping")), reply("done")]), [ping], session, sink=events.append)
    assert agent.run_sync("x") == "done"
    notices = [e for e in events if isinstance(e, Notice)]
    assert notices and notices[0].level == "warn" and "planner exploded" in notices[0].message
