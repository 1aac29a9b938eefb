"""A session's unfinished turn, read from its log (docs/durable-runs.md): what `Agent.resume`
continues, what `Session.approve` / `Session.deny` answer, what ``foldlog approve`` lists.

A turn is unfinished when its last ``turn/end`` says ``interrupted`` (written by the load repair
when a process died inside the turn: docs/log-format.md, "Repair"), ``aborted`` (cancelled:
`Agent.cancel()`, Ctrl-C, SIGTERM — a deploy stopping a host) or ``approval`` (the turn paused
for a person), and no turn started after it; or when it has not ended at all (a log read without
its repair). A resumed turn starts again under the same number (``turn/start`` with
``resumed``), so a turn cut again is found the same way.

Its **open calls** are the calls of its last reply that have no real result yet:

- a call the repair gave its placeholder result (the core's text, `repair_placeholder`) was cut
  off: it may or may not have run (``state`` ``"interrupted"``);
- a call named by the turn's ``approval/request`` stands with the runner's waiting result until a
  person answers (``"waiting"``, then ``"approved"`` or ``"denied"``). An approved call's
  ``tool/call`` is written again when it starts, after the answer (its write-ahead): one found
  there without a result was cut off while running (``"interrupted"`` again).

A result written by a resume takes the place of the stand-in on the surface (``replace``), so the
history the model sees holds one result per call.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from foldlog.errors import ApprovalStateError, InvariantError
from foldlog.log.grammar import kinds
from foldlog.log.grammar.reader import read
from foldlog.log.grammar.records import (
    ApprovalAnswer,
    ApprovalRequest,
    Call,
    Reply,
    Result,
    StepStart,
    TurnEnd,
)
from foldlog.log.grammar.writer import EventWriter

if TYPE_CHECKING:
    from foldlog.log.session import Session

#: the turn/end reasons a turn can be resumed from
RESUMABLE = ("interrupted", "aborted", "approval")
#: ``turn/end`` reason of a paused turn
APPROVAL = "approval"


@dataclass(slots=True)
class OpenCall:
    """A call of the unfinished turn's last reply without a real result."""

    call_id: str
    name: str
    arguments: str
    #: ``interrupted`` (cut off: may have run), ``waiting`` (for a person), ``approved``, ``denied``
    state: str
    #: the seq of the result standing in for it (the repair's placeholder, the waiting result);
    #: a resume's result replaces it. None: none yet (a log read without its repair)
    stand_in: int | None = None
    #: the seq of its latest ``tool/call`` event (a resume's result names it as its source)
    call_seq: int | None = None
    #: a hook's question (`ask`), or ""; the denial's reason
    question: str = ""
    reason: str | None = None

    def as_pending(self) -> dict[str, str]:
        """``{id, name, arguments}`` as `ApprovalRequired.calls` names a call."""
        return {"id": self.call_id, "name": self.name, "arguments": self.arguments}


@dataclass(slots=True)
class UnfinishedTurn:
    """What a resume needs to know of a session's last turn."""

    turn: int
    #: how it ended: ``interrupted``, ``aborted``, ``approval``, or ``open`` (not ended)
    reason: str
    #: the last step's number and how many steps the turn used (every segment's)
    step: int
    steps: int
    #: the last reply's calls without a real result, in call order
    calls: list[OpenCall] = field(default_factory=list)
    #: the last step's reply was a final answer (no calls, not cut): the turn only has to end
    answer: str | None = None

    @property
    def waiting(self) -> list[OpenCall]:
        return [c for c in self.calls if c.state == "waiting"]


@functools.cache
def repair_placeholder() -> str:
    """The text of the load repair's placeholder result, asked of the core (which writes it), so
    it is spelled in one place: a call without a result, repaired."""
    from foldlog.log.session import Session

    probe = Session()
    probe.add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "probe", "type": "function", "function": {"name": "t", "arguments": "{}"}}],
        }
    )
    repaired = Session.from_bytes(probe.to_bytes())
    for record in read(repaired.events):
        if isinstance(record, Result):
            return str(record.content)
    raise InvariantError("the core's repair wrote no placeholder result")  # pragma: no cover


def _turn_bounds(session: Session) -> tuple[int, int, int | None] | None:
    """``(turn, first event of its first segment, its turn/end seq or None)`` of the last turn."""
    types = session.events.types()
    end = None
    for seq in range(len(types) - 1, -1, -1):
        if types[seq] == kinds.TURN_START:
            break
        if types[seq] == kinds.TURN_END:
            end = seq
            break
    open_turn = session.open_turn
    turn = open_turn[0] if open_turn is not None else session.last_turn
    if turn < 1:
        return None
    start = None
    for seq in range(len(types) - 1, -1, -1):
        if types[seq] != kinds.TURN_START:
            continue
        data = session.events.plain(seq, seq + 1)[0].get("data") or {}
        if data.get("turn") != turn:
            break
        start = seq
    if start is None:
        return None
    return turn, start, end


def unfinished_turn(session: Session) -> UnfinishedTurn | None:
    """The session's last turn when it can be resumed (module notes), else None."""
    bounds = _turn_bounds(session)
    if bounds is None:
        return None
    turn, start, end = bounds
    records = list(read(session.events.plain(start, len(session))))
    reason = "open"
    if end is not None:
        last_end = next(r for r in reversed(records) if isinstance(r, TurnEnd))
        reason = last_end.reason or ""
        if reason not in RESUMABLE:
            return None
    state = UnfinishedTurn(turn, reason, 0, 0)
    reply: Reply | None = None
    after_reply: list[Any] = []
    for r in records:
        if isinstance(r, StepStart):
            state.steps += 1
            state.step = r.step or state.step
        elif isinstance(r, Reply) and r.is_request:
            reply, after_reply = r, []
        elif reply is not None:
            after_reply.append(r)
    if reply is None or reply.interrupted:
        return state  # cut before or while the reply streamed: the next request is made again
    if not reply.calls:
        state.answer = reply.content if isinstance(reply.content, str) else ""
        return state
    state.calls = _open_calls(reply, after_reply)
    return state


def _open_calls(reply: Reply, later: list[Any]) -> list[OpenCall]:
    """The calls of ``reply`` without a real result, from the records after it (module notes)."""
    placeholder = repair_placeholder()
    requests = [r for r in later if isinstance(r, ApprovalRequest)]
    request = requests[-1] if requests else None
    asked = {str(c.get("callId")): c for c in request.calls} if request is not None else {}
    asked_at = request.seq if request is not None else -1
    answers: dict[str, ApprovalAnswer] = {}
    for r in later:
        if isinstance(r, ApprovalAnswer) and r.call_id is not None:
            answers.setdefault(r.call_id, r)  # the first answer stands
    out = []
    for c in reply.calls:
        waited = c.id in asked
        calls = [r for r in later if isinstance(r, Call) and r.call_id == c.id]
        results = [r for r in later if isinstance(r, Result) and r.call_id == c.id]
        # a waiting call's stand-in is its result before the request; a cut one's, the repair's
        stand_ins = [
            r.seq
            for r in results
            if (waited and r.seq < asked_at) or (r.is_error and r.content == placeholder)
        ]
        if any(r.seq not in stand_ins for r in results):
            continue  # it has its real result
        started = not waited or any(r.seq > asked_at for r in calls)
        call = OpenCall(
            c.id,
            c.name,
            c.arguments,
            "interrupted",
            stand_ins[0] if stand_ins else None,
            calls[-1].seq if calls else None,
        )
        if not started:
            call.question = str(asked[c.id].get("question") or "")
            answer = answers.get(c.id)
            call.state = "waiting" if answer is None else "approved" if answer.approved else "denied"
            call.reason = answer.reason if answer is not None else None
        out.append(call)
    return out


def answer_approval(session: Session, call_id: str, approved: bool, reason: str | None = None) -> int:
    """Record a person's answer to a waiting call and store it (`Session.approve`/`deny`); the
    answer's seq. Refuses a call that is not waiting (`ApprovalStateError`)."""
    state = unfinished_turn(session)
    if state is None or state.reason != APPROVAL:
        raise ApprovalStateError(f"session {session.id} is not paused for approval")
    waiting = {c.call_id: c for c in state.calls}
    call = waiting.get(call_id)
    if call is None or call.state != "waiting":
        names = ", ".join(c.call_id for c in state.waiting) or "none"
        what = "was already answered" if call is not None else "is not a call of the paused turn"
        raise ApprovalStateError(f"call {call_id!r} {what} (calls waiting: {names})")
    seq = EventWriter.on(session).approval_answer(call_id, approved, reason)
    session.flush()
    return seq


__all__ = [
    "APPROVAL",
    "RESUMABLE",
    "OpenCall",
    "UnfinishedTurn",
    "answer_approval",
    "repair_placeholder",
    "unfinished_turn",
]
