"""The agent's side of writing the log: :class:`StepRecorder` appends the grammar's events
(made by `foldlog.log.grammar.writer.EventWriter`, the one writer) to the agent's session as the
loop goes, tells the sink what a front end shows, and keeps the open step so that any end — an
answer, an error, a cancellation — leaves the log valid.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from foldlog.events import Steer, ToolDispatch, ToolResult, TurnDone, TurnStarted
from foldlog.log.grammar.writer import EventWriter, assistant_message
from foldlog.log.text import clean_text, display_text

if TYPE_CHECKING:
    from foldlog.log.grammar.types import ToolCall, Usage
    from foldlog.log.session import Session
    from foldlog.tools.runner import CallResult, ToolRunner

_log = logging.getLogger("foldlog.agent")

CANCELLED_BEFORE = "error: cancelled before execution"
CANCELLED_DURING = "error: cancelled during execution"


@dataclass(slots=True)
class Reply:
    """What one provider stream delivered so far (kept for cancellation and interruptions)."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    thinking_blocks: list[Mapping[str, str]] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish: str | None = None
    # seqs of the `assistant/chunk` events recorded for this stream (Options.record_chunks)
    chunks: list[int] | None = None


@dataclass(slots=True)
class OpenStep:
    """The open step's state, so an abort can close it validly."""

    turn: int
    step: int
    reply: Reply | None = None
    calls: list[tuple[ToolCall, int]] = field(default_factory=list)  # (call, seq of its tool/call)
    results_logged: int = 0


class StepRecorder:
    """The agent's writer: the grammar's events appended to its session, each one that a front end
    shows told to the sink; keeps the open step."""

    def __init__(self, session: Session, emit: Callable[[Any], None]) -> None:
        self.session = session
        self.emit = emit
        #: the grammar's writer on the session (`request/header`, `assistant/chunk` and
        #: `output/validated` are written through it by `request.py` and `output.py`)
        self.events = EventWriter.on(session)
        self.open: OpenStep | None = None

    def start_turn(self, turn: int, resumed: str | None = None) -> None:
        """``resumed``: how the turn ended before `Agent.resume` continues it."""
        self.events.turn_start(turn, resumed=resumed)
        self.emit(TurnStarted(turn))

    def start_step(self, turn: int, step: int) -> None:
        self.open = OpenStep(turn, step)
        self.events.step_start(turn, step)

    def user(self, message: Mapping[str, Any]) -> None:
        self.events.user(message)
        if message.get("source") == "steer":
            self.emit(Steer(display_text(message.get("content"))))

    def reply(
        self,
        turn: int,
        step: int,
        reply: Reply,
        content: str,
        calls: Sequence[ToolCall],
        cost: Mapping[str, Any] | None = None,
    ) -> None:
        """The assistant message of a finished stream (``cost``: its priced usage, `foldlog.cost`)."""
        message = assistant_message(
            clean_text(content)[0],
            reasoning=clean_text("".join(reply.reasoning))[0] if reply.reasoning else None,
            calls=[(c.id, c.name, c.arguments) for c in calls],
            thinking_blocks=reply.thinking_blocks,
        )
        usage = reply.usage.to_dict() if reply.usage is not None else None
        extra = {"cost": dict(cost)} if cost else None
        self.events.assistant(turn, step, message, usage=usage, extra=extra, sources=reply.chunks)
        if self.open is not None:
            self.open.reply = None

    def partial(self, turn: int, step: int, fallback: str = "") -> None:
        """Keep the text of a stream that stopped early as an interrupted assistant message."""
        reply = self.open.reply if self.open is not None else None
        text = clean_text(("".join(reply.text) if reply is not None else "") or fallback)[0]
        reasoning = clean_text("".join(reply.reasoning) if reply is not None else "")[0]
        if self.open is not None:
            self.open.reply = None
        if not text and not reasoning:
            return
        message = assistant_message(text, reasoning=reasoning or None)
        usage = reply.usage.to_dict() if reply is not None and reply.usage is not None else None
        sources = reply.chunks if reply is not None else None
        self.events.assistant(turn, step, message, usage=usage, interrupted=True, sources=sources)

    def calls(self, turn: int, step: int, calls: Sequence[ToolCall]) -> None:
        assert self.open is not None
        for c in calls:
            seq = self.events.tool_call(turn, step, c.id, c.name, c.arguments)
            self.open.calls.append((c, seq))
            self.emit(ToolDispatch(c.id, c.name, c.arguments))

    async def run_batch(
        self, runner: ToolRunner, calls: list[ToolCall], flush: Callable[[], Awaitable[None]]
    ) -> list[CallResult]:
        """Log and run the open step's batch with its write-ahead (docs/durable-runs.md): before a
        tool that is not ``read_only`` runs, its call and everything before it are stored
        (``flush``); its result is stored as soon as it is final."""
        st = self.open
        assert st is not None
        self.calls(st.turn, st.step, calls)
        if not all(runner.read_only(c.name) for c in calls):
            await flush()

        async def stored(r: CallResult) -> None:
            self.result(r.content, r.is_error, r.meta)
            if r.awaiting is None and not runner.read_only(r.call.name):
                await flush()

        return await runner.run_batch(calls, turn=st.turn, step=st.step, on_result=stored)

    def result(
        self, content: str | list[dict[str, Any]], is_error: bool, meta: Mapping[str, Any] | None = None
    ) -> None:
        """The result of the open step's first call without one."""
        st = self.open
        assert st is not None
        call, seq = st.calls[st.results_logged]
        st.results_logged += 1
        self.events.tool_result(
            st.turn, st.step, call.id, call.name, content, is_error, meta=meta, call_seq=seq
        )
        self.emit(ToolResult(call.id, call.name, display_text(content), is_error))

    def fill_results(
        self, content: str, done: Mapping[int, CallResult] | None = None, started: set[int] | None = None
    ) -> None:
        """Give every logged call without a result one (real when it finished, else ``content``)."""
        st = self.open
        if st is None:
            return
        while st.results_logged < len(st.calls):
            k = st.results_logged
            if done is not None and k in done:
                self.result(done[k].content, done[k].is_error, done[k].meta)
            elif started is not None and k in started:
                self.result(CANCELLED_DURING, True)
            else:
                self.result(content, True)

    def close_step(self) -> None:
        st = self.open
        if st is None:
            return
        if st.reply is not None:
            self.partial(st.turn, st.step)
        self.open = None
        self.events.step_end(st.turn, st.step)

    def end_turn(self, turn: int, kind: str, detail: Mapping[str, Any], error: str | None) -> None:
        self.events.turn_end(turn, kind, detail)
        self.session.flush()
        self.emit(TurnDone(turn, kind, error))

    def fail(self, turn: int, error: BaseException, not_run: str) -> None:
        """Close a turn that failed (``error``), whatever failed: calls without a result get
        ``not_run``, the open step's partial reply is kept, and ``turn/end`` says ``error``. When
        the failure was in writing the log itself (the reply could not be recorded), what cannot
        be written is left out and the step and turn are still closed, so the next run never
        starts inside this turn."""
        message = clean_text(f"{type(error).__name__}: {error}")[0]
        try:
            self.fill_results(not_run)
            self.close_step()
        except Exception:
            _log.warning("turn %d: could not record the failed step's remains", turn, exc_info=True)
            st, self.open = self.open, None
            if st is not None:
                self.events.step_end(st.turn, st.step)
        self.end_turn(turn, "error", {"message": message}, message)

    def abort(self, turn: int, done: Mapping[int, CallResult], started: set[int]) -> None:
        """Close a cancelled turn: finished calls keep their results, the others are cancelled."""
        st = self.open
        if st is not None and st.calls:
            self.fill_results(CANCELLED_BEFORE, done, started)
        self.close_step()
        self.end_turn(turn, "aborted", {}, "cancelled")


__all__ = ["CANCELLED_BEFORE", "CANCELLED_DURING", "OpenStep", "Reply", "StepRecorder"]
