"""The one writer of the agent's event grammar (docs/log-format.md, "Turns and steps"):
``turn/start``, ``step/start``, ``user/message``, ``assistant/message``, ``tool/call``,
``tool/result``, ``step/end``, ``turn/end``.

:class:`Recorder` builds each event's data and hands it to an ``append`` function: the agent's
appends to its session as the loop goes (:class:`StepRecorder`, which also keeps the open step so
that any end — an answer, an error, a cancellation — leaves the log valid); the transcript
importers' collects a batch for `Session.append_events`
(:class:`foldlog.interchange.events.EventBuilder`). No other code writes these events.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from foldlog.events import Steer, ToolDispatch, ToolResult, TurnDone, TurnStarted
from foldlog.log.text import clean_text, display_text
from foldlog.tools.content import render_text

if TYPE_CHECKING:
    from foldlog.log.session import Session
    from foldlog.providers.base import ToolCall, Usage
    from foldlog.tools.runner import CallResult

SurfaceOp = str | dict[str, Any]
#: ``append(type, data, surface_op, source_event_seqs) -> seq``
Append = Callable[[str, dict[str, Any], "SurfaceOp | None", "Sequence[int] | None"], int]
#: a tool call as the log keeps it: ``(call id, tool name, raw JSON arguments)``
CallSpec = tuple[str, str, str]

_log = logging.getLogger("foldlog.agent")

CANCELLED_BEFORE = "error: cancelled before execution"
CANCELLED_DURING = "error: cancelled during execution"


def assistant_message(
    content: Any,
    *,
    reasoning: str | None = None,
    calls: Sequence[CallSpec] = (),
    thinking_blocks: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """An assistant message in the OpenAI chat shape the log keeps (``thinking_blocks``: the
    provider's signed reasoning, sent back verbatim: docs/log-format.md)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if thinking_blocks:
        message["thinking_blocks"] = [dict(b) for b in thinking_blocks]
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    return message


class Recorder:
    """Builds the grammar's events; ``append`` stores each one and returns its seq."""

    __slots__ = ("_append",)

    def __init__(self, append: Append) -> None:
        self._append = append

    def turn_start(self, turn: int) -> int:
        return self._append("turn/start", {"turn": turn}, None, None)

    def step_start(self, turn: int, step: int) -> int:
        return self._append("step/start", {"turn": turn, "step": step}, None, None)

    def user(self, message: Mapping[str, Any]) -> int:
        """A user message (``role``, ``content``, and ``source`` when it is not typed input)."""
        return self._append("user/message", dict(message), "append", None)

    def assistant(
        self,
        turn: int,
        step: int,
        message: dict[str, Any],
        *,
        usage: Mapping[str, Any] | None = None,
        interrupted: bool = False,
        extra: Mapping[str, Any] | None = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        """A reply (``interrupted``: the text of a stream that stopped early); ``sources``: the
        ``assistant/chunk`` events it was assembled from."""
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
        if interrupted:
            data["interrupted"] = True
        if usage:
            data["usage"] = dict(usage)
        if extra:
            data.update(extra)
        return self._append("assistant/message", data, "append", sources)

    def tool_call(self, turn: int, step: int, call_id: str, name: str, arguments: str) -> int:
        data = {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}
        return self._append("tool/call", data, None, None)

    def tool_result(
        self,
        turn: int,
        step: int,
        call_id: str,
        name: str,
        content: Any,
        is_error: bool,
        *,
        meta: Mapping[str, Any] | None = None,
        call_seq: int | None = None,
    ) -> int:
        """The result of a call (``call_seq``: its ``tool/call`` event; ``None`` when no call was
        seen, as in a foreign transcript). ``meta``: what was done to the output to make it
        loggable (``utf8Replaced``, ``omittedBytes``, …)."""
        message = {
            "role": "tool",
            "toolCallId": call_id,
            "toolName": name,
            "content": content,
            "isError": bool(is_error),
        }
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
        if meta:
            data["meta"] = dict(meta)
        sources = [call_seq] if call_seq is not None else []
        return self._append("tool/result", data, "append", sources)

    def step_end(self, turn: int, step: int) -> int:
        return self._append("step/end", {"turn": turn, "step": step}, None, None)

    def turn_end(self, turn: int, kind: str, detail: Mapping[str, Any] | None = None) -> int:
        return self._append(
            "turn/end", {"turn": turn, "reason": {"kind": kind, **(detail or {})}}, None, None
        )


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
        self.events = Recorder(self.append)
        self.open: OpenStep | None = None

    def append(
        self,
        type_: str,
        data: Mapping[str, Any],
        surface_op: SurfaceOp | None = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        """Any event (``request/header``, ``assistant/chunk``, …); returns its seq."""
        return self.session.append_event(type_, data, surface_op=surface_op, source_event_seqs=sources)

    def start_turn(self, turn: int) -> None:
        self.events.turn_start(turn)
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
        self.emit(ToolResult(call.id, call.name, render_text(content), is_error))

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


__all__ = ["CallSpec", "OpenStep", "Recorder", "Reply", "StepRecorder", "assistant_message"]
