"""The agent's side of approvals (docs/durable-runs.md): a step whose calls wait for a person
pauses its turn.

The tool runner decides which calls wait (a tool's ``needs_approval``, a ``tool_pre_execute``
hook's `ask` with no ``hooks.approver`` set: `foldlog.tools.runner.ToolRunner._approval`) and
gives each a stand-in result; the calls of the step that need no approval run as usual. Then
the step records an ``approval/request`` naming the waiting calls, the turn ends ``approval`` and
`run` raises `ApprovalRequired`. The answers are recorded by `Session.approve` / `Session.deny`
(`foldlog.log.unfinished.answer_approval`), from any process that can open the session; the
turn goes on with `Agent.resume` (`foldlog.agent.resume`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from foldlog.agent.hook_points import _TurnEnd
from foldlog.errors import ApprovalRequired
from foldlog.log.unfinished import APPROVAL

if TYPE_CHECKING:
    from foldlog.agent.recorder import StepRecorder
    from foldlog.tools.runner import CallResult


class _Paused(_TurnEnd):
    """Control flow: the turn ends ``approval``; ``calls``: ``{id, name, arguments}`` of the
    calls waiting (for `ApprovalRequired`)."""

    def __init__(self, detail: Mapping[str, Any], calls: list[dict[str, str]]) -> None:
        super().__init__(APPROVAL, detail)
        self.calls = calls


def pause(rec: StepRecorder, turn: int, step: int, results: Sequence[CallResult]) -> _Paused:
    """Pause the turn after a batch in which some calls wait for a person: the request recorded,
    the step closed; the `_Paused` end to raise."""
    detail = record_request(rec, turn, step, results)
    rec.close_step()
    return _Paused(detail, waiting_calls(results))


def record_request(rec: StepRecorder, turn: int, step: int, results: Sequence[CallResult]) -> dict[str, Any]:
    """Record the ``approval/request`` of the waiting calls among ``results`` (their stand-in
    results are logged already); the ``turn/end`` detail naming them."""
    waiting = [r for r in results if r.awaiting is not None]
    calls = []
    for r in waiting:
        entry = {"callId": r.call.id, "name": r.call.name, "arguments": r.call.arguments}
        if r.awaiting:
            entry["question"] = r.awaiting
        calls.append(entry)
    rec.events.approval_request(turn, step, calls)
    return {"calls": [r.call.id for r in waiting]}


def approval_required(turn: int, calls: Sequence[Mapping[str, str]]) -> ApprovalRequired:
    """The error `run` / `resume` raise for a paused turn; ``calls``: ``{id, name, arguments}``."""
    listed = ", ".join(f"{c['name']} ({c['id']})" for c in calls)
    return ApprovalRequired(
        f"turn {turn} paused: {len(calls)} call(s) wait for approval: {listed}. Answer each with "
        "Session.approve(call_id) / Session.deny(call_id, reason) or `foldlog approve SESSION "
        "CALL_ID [--deny REASON]`, then Agent.resume()",
        calls=[dict(c) for c in calls],
    )


def waiting_calls(results: Sequence[CallResult]) -> list[dict[str, str]]:
    """``{id, name, arguments}`` of the calls among ``results`` that wait for approval."""
    return [
        {"id": r.call.id, "name": r.call.name, "arguments": r.call.arguments}
        for r in results
        if r.awaiting is not None
    ]


__all__ = ["APPROVAL", "approval_required", "pause", "record_request", "waiting_calls"]
