"""The one typed reader of the log's grammar (docs/log-format.md, "Reading the log").

`read(events)` turns a log's events — `Session.events` or a list of event dicts — into records,
one per event, in seq order: a typed view of each kind (`Reply`, `Result`, `TurnEnd`, …, defined in
`foldlog.log.grammar.records` and re-exported here), each with its ``seq`` and ``time``, and
`Other` for a kind this version does not know (kept, never dropped).
`record_of(event, state)` is the same reading for one event, for readers fed live (the spans of a
running agent, the agent's cost meter); the `ReadState` carries what one event tells about the
next ones: the model requests are made with.

**The model of a request** (the one rule; cost prices with it, spans name it): a reply's `Reply.model`
is the ``model`` of the latest ``request/header`` before it, else the model the reading started
with (``read(…, model=…)``: the model a caller knows the session ran, e.g. ``batch --model``);
`Reply.answered` is the model the log says answered (``data.model``, as imported transcripts and
summaries record it), and `Reply.billed_model` the one a request is priced as: the answering model
when the log names it, else its request's.

Records hold the event's own values — no copy is made: ``data`` is the event's payload, for the
keys a record does not name. They are only as mutable as the events read: `Session.events` is read
from fresh decodings of the log, not from recorded history.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from foldlog.log.frozen import EventsView
from foldlog.log.grammar import kinds
from foldlog.log.grammar.records import (
    ApprovalAnswer,
    ApprovalRequest,
    Call,
    Chunk,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    Erasure,
    MessageRecord,
    Other,
    OutputValidated,
    Record,
    Reply,
    RequestHeader,
    Result,
    StepEnd,
    StepStart,
    SurfaceOp,
    SystemMessage,
    TurnEnd,
    TurnStart,
    UserMessage,
    op_kind,
)
from foldlog.log.grammar.records import int_or_none as _int
from foldlog.log.grammar.records import map_or_none as _map
from foldlog.log.grammar.records import str_or_none as _str
from foldlog.log.grammar.types import ToolCall, Usage

_EMPTY: Mapping[str, Any] = MappingProxyType({})
#: events decoded per call to the core when reading a `Session`
_CHUNK = 4096


class ReadState:
    """What earlier events tell about the next ones, carried from event to event: ``model``, the
    model the next request is made with (the latest ``request/header``'s, else the model the
    reading started with)."""

    __slots__ = ("model",)

    def __init__(self, model: str | None = None) -> None:
        self.model = model


# --- one builder per kind -------------------------------------------------------------------------

_Data = Mapping[str, Any]
#: ``(event, its data, seq, time, state) -> record``
_Build = Callable[[_Data, _Data, int, "int | None", ReadState], Record]


def _op(ev: Mapping[str, Any]) -> SurfaceOp:
    op = ev.get("surfaceOp", "append")
    return op if isinstance(op, str | dict) or isinstance(op, Mapping) else "append"


def _sources(ev: Mapping[str, Any]) -> Sequence[int]:
    sources = ev.get("sourceEventSeqs")
    return sources if isinstance(sources, list | tuple) else ()


def _system(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return SystemMessage(seq, time, d, _op(ev), d.get("content"))


def _user(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return UserMessage(
        seq, time, d, _op(ev), _sources(ev), d.get("content"), _str(d.get("source")), _str(d.get("name"))
    )


def _arguments(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {}, ensure_ascii=False)


def _calls(message: Mapping[str, Any]) -> tuple[ToolCall, ...]:
    """The calls of an assistant message: OpenAI's ``{id, type, function:{name, arguments}}`` or
    the flat ``{id, name, arguments}`` (docs/log-format.md)."""
    raw = message.get("tool_calls")
    if not raw or not isinstance(raw, list | tuple):
        return ()
    calls = []
    for c in raw:
        if _map(c) is None:
            continue
        fn = _map(c.get("function")) or c
        calls.append(
            ToolCall(str(c.get("id") or ""), str(fn.get("name") or ""), _arguments(fn.get("arguments")))
        )
    return tuple(calls)


def _reply(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    message = _map(d.get("message")) or _EMPTY
    usage = _map(d.get("usage"))
    return Reply(
        seq,
        time,
        d,
        _op(ev),
        _sources(ev),
        _int(d.get("turn")),
        _int(d.get("step")),
        message,
        message.get("content"),
        _str(message.get("reasoning_content")),
        _calls(message),
        Usage.from_dict(usage) if usage is not None else None,
        _map(d.get("cost")),
        bool(d.get("interrupted")),
        st.model,
        _str(d.get("model")),
    )


def _call(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return Call(
        seq,
        time,
        d,
        _int(d.get("turn")),
        _int(d.get("step")),
        _str(d.get("callId")),
        _str(d.get("name")),
        _str(d.get("arguments")),
    )


def _result(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    message = _map(d.get("message")) or _EMPTY
    return Result(
        seq,
        time,
        d,
        _op(ev),
        _sources(ev),
        _int(d.get("turn")),
        _int(d.get("step")),
        message,
        _str(message.get("toolCallId")),
        _str(message.get("toolName")),
        message.get("content"),
        bool(message.get("isError")),
        _map(d.get("meta")),
        _map(d.get("masked")),
    )


def _turn_start(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return TurnStart(seq, time, d, _int(d.get("turn")))


def _turn_end(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    reason = _map(d.get("reason")) or _EMPTY
    return TurnEnd(seq, time, d, _int(d.get("turn")), _str(reason.get("kind")), reason)


def _step_start(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return StepStart(seq, time, d, _int(d.get("turn")), _int(d.get("step")))


def _step_end(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return StepEnd(seq, time, d, _int(d.get("turn")), _int(d.get("step")))


def _header(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    model = _str(d.get("model"))
    st.model = model  # the requests from here on are made with it (a header without one: unknown)
    tools = d.get("tools")
    return RequestHeader(
        seq, time, d, model, tools if isinstance(tools, list | tuple) else (), _map(d.get("params")) or _EMPTY
    )


def _chunk(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return Chunk(seq, time, d, _int(d.get("turn")), _int(d.get("step")), _map(d.get("chunk")) or _EMPTY)


def _output(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return OutputValidated(
        seq,
        time,
        d,
        _int(d.get("turn")),
        _int(d.get("step")),
        _str(d.get("name")),
        _str(d.get("mode")),
        _int(d.get("retries")),
        d.get("value"),
    )


def _compaction_start(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return CompactionStart(
        seq, time, d, _str(d.get("id")), _str(d.get("trigger")), _str(d.get("strategy")), _str(d.get("focus"))
    )


def _seqs(value: Any) -> Sequence[int] | None:
    return value if isinstance(value, list | tuple) else None


def _compaction_summary(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    usage = _map(d.get("usage"))
    return CompactionSummary(
        seq,
        time,
        d,
        _str(d.get("id")),
        _str(d.get("summary")),
        _seqs(d.get("folded")),
        _seqs(d.get("kept")),
        _int(d.get("tokensBefore")),
        _int(d.get("tokensAfter")),
        _str(d.get("model")),
        bool(d.get("mechanical")),
        _int(d.get("requests")),
        Usage.from_dict(usage) if usage is not None else None,
        _map(d.get("cost")),
        _int(d.get("countedTokens")),
    )


def _compaction_end(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return CompactionEnd(
        seq,
        time,
        d,
        _str(d.get("id")),
        d.get("error"),
        _int(d.get("pruned")),
        _int(d.get("masked")),
        d.get("skipped"),
    )


def _approval_request(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    calls = d.get("calls")
    listed = [c for c in calls if isinstance(c, Mapping)] if isinstance(calls, list | tuple) else []
    return ApprovalRequest(seq, time, d, _int(d.get("turn")), _int(d.get("step")), listed)


def _approval_answer(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return ApprovalAnswer(
        seq, time, d, _str(d.get("callId")), d.get("approved") is True, _str(d.get("reason"))
    )


def _erasure(ev: _Data, d: _Data, seq: int, time: int | None, st: ReadState) -> Record:
    return Erasure(seq, time, d, _seqs(d.get("seqs")) or (), _str(d.get("reason")), _int(d.get("at")))


_BUILDERS: dict[str, _Build] = {
    kinds.SYSTEM_MESSAGE: _system,
    kinds.USER_MESSAGE: _user,
    kinds.ASSISTANT_MESSAGE: _reply,
    kinds.ASSISTANT_CHUNK: _chunk,
    kinds.TOOL_CALL: _call,
    kinds.TOOL_RESULT: _result,
    kinds.TURN_START: _turn_start,
    kinds.TURN_END: _turn_end,
    kinds.STEP_START: _step_start,
    kinds.STEP_END: _step_end,
    kinds.REQUEST_HEADER: _header,
    kinds.OUTPUT_VALIDATED: _output,
    kinds.COMPACTION_START: _compaction_start,
    kinds.COMPACTION_SUMMARY: _compaction_summary,
    kinds.COMPACTION_END: _compaction_end,
    kinds.APPROVAL_REQUEST: _approval_request,
    kinds.APPROVAL_ANSWER: _approval_answer,
    kinds.ERASURE: _erasure,
}


# --- reading --------------------------------------------------------------------------------------


def record_of(event: Mapping[str, Any], state: ReadState | None = None) -> Record:
    """The record of one event; ``state`` carries the request model from event to event (without
    it, a `Reply`'s `model` is unknown: None)."""
    kind = event.get("type")
    seq = event.get("seq")
    time = event.get("time")
    seq = seq if type(seq) is int else -1  # exact types: not a bool
    time = time if type(time) is int else None
    data = _map(event.get("data")) or _EMPTY
    build = _BUILDERS.get(kind) if isinstance(kind, str) else None
    if build is None:
        op = event.get("surfaceOp")
        return Other(seq, time, data, str(kind), op if isinstance(op, str) else _map(op))
    return build(event, data, seq, time, state if state is not None else ReadState())


def _events(events: Iterable[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    if isinstance(events, EventsView):
        # decoded afresh in chunks, not frozen: the records hold no part of recorded history
        n = len(events)
        for start in range(0, n, _CHUNK):
            yield from events.plain(start, min(n, start + _CHUNK))
    else:
        yield from events


def read(
    events: Iterable[Mapping[str, Any]], *, model: str | None = None, state: ReadState | None = None
) -> Iterator[Record]:
    """The records of ``events`` (`Session.events`, or event dicts in seq order), one per event.
    ``model``: the model of requests made before any ``request/header`` (module notes);
    ``state``: carry on from a reading that has already seen the events before these (``model``
    is then ignored); it is updated as the events are read."""
    st = state if state is not None else ReadState(model)
    for event in _events(events):
        yield record_of(event, st)


def latest_model(events: Sequence[Mapping[str, Any]], *, answered: bool = False) -> str | None:
    """The latest model the log names: a ``request/header``'s (what requests were made with), and
    with ``answered`` a reply's ``data.model`` too (the model that answered, as imported
    transcripts record it) — whichever comes last; None when none names one. Reads backwards and
    decodes only those events (a `Session`'s others are never decoded)."""
    wanted = {kinds.REQUEST_HEADER, kinds.ASSISTANT_MESSAGE} if answered else {kinds.REQUEST_HEADER}
    if isinstance(events, EventsView):
        types = events.types()
        for seq in range(len(types) - 1, -1, -1):
            if types[seq] in wanted:
                named = _named_model(events.plain(seq, seq + 1)[0])
                if named:
                    return named
        return None
    for event in reversed(events):
        if event.get("type") in wanted:
            named = _named_model(event)
            if named:
                return named
    return None


def _named_model(event: Mapping[str, Any]) -> str | None:
    data = event.get("data")
    return _str(data.get("model")) if isinstance(data, Mapping) else None


__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Call",
    "Chunk",
    "CompactionEnd",
    "CompactionStart",
    "CompactionSummary",
    "Erasure",
    "MessageRecord",
    "Other",
    "OutputValidated",
    "ReadState",
    "Record",
    "Reply",
    "RequestHeader",
    "Result",
    "StepEnd",
    "StepStart",
    "SurfaceOp",
    "SystemMessage",
    "TurnEnd",
    "TurnStart",
    "UserMessage",
    "latest_model",
    "op_kind",
    "read",
    "record_of",
]
