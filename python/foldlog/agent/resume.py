"""Continuing a session's unfinished turn (`Agent.resume`, docs/durable-runs.md).

`plan_resume` reads what is left of the turn (`foldlog.log.unfinished`); the loop starts the turn
again under its own number (``turn/start`` with ``resumed``) and `resolve_calls` gives every open
call of its last reply its result before the loop goes on with the next step:

- an approved call runs, once: its ``tool/call`` is written again and stored before it runs (so a
  process that dies while it runs leaves the fact behind), its result stored right after;
- a denied call gets an error result with the person's reason;
- a call cut off by a crash (no result stored) runs again only when its tool is ``read_only`` or
  ``idempotent`` (or `Options.rerun_interrupted`); any other gets the error result
  `NOT_RERUN`: it may have had its effect, and doing it twice could be worse than not at all.

Each result takes the place of the call's stand-in result on the surface, so the model sees one
result per call. A turn whose last reply was a final answer only gets its end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from foldlog.agent.approvals import approval_required
from foldlog.agent.hook_points import _TurnEnd
from foldlog.errors import AgentBusyError, NoUnfinishedTurnError
from foldlog.events import ToolDispatch, ToolResult
from foldlog.log.grammar.types import ToolCall
from foldlog.log.text import display_text
from foldlog.log.unfinished import OpenCall, UnfinishedTurn, unfinished_turn

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent, _TurnState
    from foldlog.tools.runner import CallResult

NOT_RERUN = (
    "error: interrupted and not re-run: {name} was cut off before its result was stored, so it may "
    "or may not have had its effect; it is not run again because it is not declared read_only or "
    "idempotent. Check its effect before calling it again."
)
DENIED = "error: denied: {name} was not run: {reason}"


class Resuming:
    """`Agent.resume` (a mixin of `foldlog.agent.loop.Agent`, kept apart so the loop module stays
    one job): the loop starts a turn from ``_resuming`` when it is set (`Agent._turn_loop`)."""

    _task: asyncio.Task[Any] | None
    _resuming: UnfinishedTurn | None

    @property
    def _self(self) -> Agent:
        return cast("Agent", self)

    async def resume(self) -> str:
        """Continue the session's unfinished turn — cut off by a crash, cancelled, or paused for
        approval — then any queued work; the last answer (docs/durable-runs.md). A call whose
        result was stored is never run again; approved calls run once, denied ones get an error
        result, a call cut off runs again only when its tool is ``read_only`` or ``idempotent``
        (`Options.rerun_interrupted`: any). `NoUnfinishedTurnError` when there is no such turn,
        `ApprovalRequired` while calls still wait for an answer."""
        if self._task is not None:
            raise AgentBusyError("this agent is already running")
        self._resuming = plan_resume(self._self)
        try:
            answer: str = await self._self.run()
        finally:
            self._resuming = None
        return answer

    def resume_sync(self) -> str:
        """``resume`` for plain scripts (as `Agent.run_sync`)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            raise AgentBusyError(
                "Agent.resume_sync() cannot be called from a running event loop; use await agent.resume()"
            )

        async def resume_and_close() -> str:
            try:
                return await self.resume()
            finally:
                await self._self.registry.aclose()

        return asyncio.run(resume_and_close())

    async def _resume_turn(self, t: _TurnState, plan: UnfinishedTurn | None) -> None:
        """A resumed turn's first part (``plan``; None: not a resumed turn): its open calls get
        their results, then it goes on as after any step; a turn cut after its final answer only
        ends."""
        agent = self._self
        if plan is None:
            return
        if plan.answer is not None:
            t.answer = plan.answer
            raise _TurnEnd("completed")
        await resolve_calls(agent, plan)
        if plan.calls:
            await agent._maybe_compact()
        if t.steps_used:
            t.grace = agent._next_step(t.steps_used, t.grace)


def plan_resume(agent: Agent) -> UnfinishedTurn:
    """What is left of the session's unfinished turn; `NoUnfinishedTurnError` when there is none,
    `ApprovalRequired` (naming them) while some of its calls still wait for an answer."""
    session = agent.session
    plan = unfinished_turn(session)
    if plan is None:
        last = session.last_turn
        raise NoUnfinishedTurnError(
            f"session {session.id} has no unfinished turn to resume"
            + (f": its last turn ({last}) ended" if last else ": it has no turns")
        )
    waiting = plan.waiting
    if waiting:
        raise approval_required(plan.turn, [c.as_pending() for c in waiting])
    return plan


async def resolve_calls(agent: Agent, plan: UnfinishedTurn) -> None:
    """Give each open call of ``plan`` its result (module notes), inside its step, re-opened."""
    if not plan.calls:
        return
    agent._rec.start_step(plan.turn, plan.step)
    results = _Results(agent, plan.turn, plan.step)
    to_run: list[OpenCall] = []
    for call in plan.calls:
        tool = agent.registry.get(call.name)
        again = tool is None or tool.may_run_again or agent.options.rerun_interrupted
        if call.state == "denied":
            results.record(call, DENIED.format(name=call.name, reason=call.reason or "no reason given"))
        elif call.state == "approved" or again:
            to_run.append(call)  # (an unknown tool only gets the runner's error result)
        else:
            results.record(call, NOT_RERUN.format(name=call.name))
    if to_run:
        await _run(agent, results, to_run)
    await agent._flush()
    agent._rec.close_step()


class _Results:
    """Writes a resumed step's results: each in the place of its call's stand-in on the surface."""

    def __init__(self, agent: Agent, turn: int, step: int) -> None:
        self.agent, self.turn, self.step = agent, turn, step
        self.surface = set(agent.session.surface_nodes())

    def record(
        self,
        call: OpenCall,
        content: str | list[dict[str, Any]],
        is_error: bool = True,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        stand_in = call.stand_in if call.stand_in in self.surface else None
        self.agent._rec.events.tool_result(
            self.turn,
            self.step,
            call.call_id,
            call.name,
            content,
            is_error,
            meta=meta,
            call_seq=call.call_seq,
            replaces=stand_in,
        )
        self.agent.emit(ToolResult(call.call_id, call.name, display_text(content), is_error))


async def _run(agent: Agent, results: _Results, calls: list[OpenCall]) -> None:
    """Run ``calls`` once each: their ``tool/call`` written again and stored first (the
    write-ahead), each result stored as soon as it is final."""
    turn, step = results.turn, results.step
    for call in calls:
        call.call_seq = agent._rec.events.tool_call(turn, step, call.call_id, call.name, call.arguments)
        agent.emit(ToolDispatch(call.call_id, call.name, call.arguments))
    await agent._flush()
    by_id = {c.call_id: c for c in calls}
    runner = agent._runner

    async def stored(result: CallResult) -> None:
        results.record(by_id[result.call.id], result.content, result.is_error, result.meta)
        if not runner.read_only(result.call.name):
            await agent._flush()

    # these calls were approved, or had started (so were allowed) before the process stopped
    runner.approved = {c.call_id for c in calls}
    try:
        await runner.run_batch(
            [ToolCall(c.call_id, c.name, c.arguments) for c in calls], turn=turn, step=step, on_result=stored
        )
    finally:
        runner.approved = set()


__all__ = ["DENIED", "NOT_RERUN", "Resuming", "plan_resume", "resolve_calls"]
