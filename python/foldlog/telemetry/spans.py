"""The one builder of OpenTelemetry spans from a session's events (docs/observability.md).

`SpanBuilder.feed` takes the events of a log in order — live, as the agent appends them
(`foldlog.telemetry.live`), or read back from a stored log (`foldlog.telemetry.replay`) — and
makes the spans the GenAI semantic conventions name, with the times the events recorded:

- ``invoke_agent``: a turn, ``turn/start`` .. ``turn/end`` (its end reason, ``error.type`` when
  the turn did not complete);
- ``chat {model}``: a model request, from the event before the reply to its ``assistant/message``
  (model, params, usage, cost);
- ``execute_tool {name}``: a tool call, ``tool/call`` .. its ``tool/result``;
- ``compaction``: ``compaction/start`` .. ``compaction/end``;
- a sub-agent's turns nest under the ``execute_tool task`` span of the call that ran it.

A span is made only when its closing event is seen, with both times taken from the events, so
the live and the replayed trees of one log are equal by construction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from foldlog.errors import ConfigError
from foldlog.log.grammar.reader import (
    Call,
    Chunk,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    ReadState,
    Record,
    Reply,
    RequestHeader,
    Result,
    SystemMessage,
    TurnEnd,
    TurnStart,
    UserMessage,
    record_of,
)
from foldlog.log.unfinished import APPROVAL

try:
    from opentelemetry import trace
    from opentelemetry.trace import SpanKind, Status, StatusCode, Tracer
except ImportError as e:  # pragma: no cover - the extra is installed wherever this is tested
    raise ConfigError("foldlog.telemetry needs OpenTelemetry: pip install 'foldlog[otel]'") from e

INSTRUMENTATION = "foldlog"
SYSTEM_PROVIDER = "foldlog"

# --- attribute names (OpenTelemetry GenAI semantic conventions; checked against the package) --
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
RESPONSE_FINISH = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
CONVERSATION = "gen_ai.conversation.id"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"
# foldlog's own (no convention names them)
REASONING_TOKENS = "foldlog.usage.reasoning_tokens"
COST = "foldlog.cost"
COST_CURRENCY = "foldlog.cost.currency"
TURN = "foldlog.turn"
STEP = "foldlog.step"
END_REASON = "foldlog.turn.end_reason"
SEQ = "foldlog.seq"
COMPACTION_ID = "foldlog.compaction.id"
COMPACTION_TRIGGER = "foldlog.compaction.trigger"
COMPACTION_FOLDED = "foldlog.compaction.folded"
COMPACTION_TOKENS_BEFORE = "foldlog.compaction.tokens_before"
COMPACTION_TOKENS_AFTER = "foldlog.compaction.tokens_after"
PARENT_SESSION = "foldlog.parent_session.id"


def _ns(time: int | None) -> int:
    return time * 1_000_000 if time is not None else 0


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(slots=True)
class _Open:
    """A span not made yet: its name, start, attributes and parent (the span stays unmade until
    its closing event, so a live run and a replay make it the same way)."""

    name: str
    start: int
    attrs: dict[str, Any]
    kind: SpanKind = SpanKind.INTERNAL
    span: Any = None  # a turn's span is made at its start (children need it as their parent)


@dataclass(slots=True)
class SpanBuilder:
    """Spans of one session's events. ``parent``: the span its turns nest under (a sub-agent's
    ``execute_tool task``); ``capture_content``: record message contents, tool arguments and
    results (off by default, as the conventions advise: they may hold anything)."""

    tracer: Tracer
    session_id: str | None = None
    provider_name: str | None = None
    agent_name: str | None = None
    capture_content: bool = False
    parent: Any = None
    parent_session: str | None = None
    #: the reading of the log so far: the model of the next request (`foldlog.log.grammar.reader`)
    reading: ReadState = field(default_factory=ReadState)
    params: dict[str, Any] = field(default_factory=dict)
    _turn: _Open | None = None
    _tools: dict[str, _Open] = field(default_factory=dict)
    _compaction: _Open | None = None
    _last_time: int = 0
    _new_input: list[Any] = field(default_factory=list)
    #: the made span of each tool call by id (sub-agents nest under them)
    tool_spans: dict[str, Any] = field(default_factory=dict)

    # --- helpers ---------------------------------------------------------------------------

    def _common(self) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if self.provider_name:
            attrs[PROVIDER] = self.provider_name
        if self.session_id:
            attrs[CONVERSATION] = self.session_id
        return attrs

    def _context(self, span: Any) -> Any:
        return trace.set_span_in_context(span) if span is not None else None

    def _current_parent(self) -> Any:
        if self._turn is not None and self._turn.span is not None:
            return self._turn.span
        return self.parent

    def _make(self, o: _Open, end: int, parent: Any, error: str | None = None) -> Any:
        span = self.tracer.start_span(
            o.name, context=self._context(parent), kind=o.kind, attributes=o.attrs, start_time=o.start
        )
        if error is not None:
            span.set_attribute(ERROR_TYPE, error)
            span.set_status(Status(StatusCode.ERROR, error))
        span.end(end_time=max(end, o.start))
        return span

    # --- feeding ---------------------------------------------------------------------------

    def prime(self, event: Mapping[str, Any]) -> None:
        """Take in an event that happened before tracing began: state only, no span."""
        record = record_of(event, self.reading)
        if isinstance(record, RequestHeader):
            self._on_request_header(record, 0)
        self._last_time = _ns(record.time) or self._last_time

    def feed(self, event: Mapping[str, Any]) -> None:
        """Take in the next event of the log."""
        self.take(record_of(event, self.reading))

    def take(self, record: Record) -> None:
        """Take in the record of the next event (read with `reading`)."""
        now = _ns(record.time)
        handler = _HANDLERS.get(type(record))
        if handler is not None:
            handler(self, record, now)
        elif isinstance(record, UserMessage | SystemMessage) and self.capture_content:
            self._new_input.append(_plain(record.data))
        if not isinstance(record, Chunk):
            self._last_time = now or self._last_time

    def finish(self, end_ns: int | None = None) -> None:
        """Close what is still open (a log that stops mid-turn) at ``end_ns`` (default: the last
        event's time)."""
        end = end_ns if end_ns is not None else self._last_time
        for call_id, o in list(self._tools.items()):
            self.tool_spans[call_id] = self._make(o, end, self._current_parent(), "unfinished")
        self._tools.clear()
        if self._compaction is not None:
            self._make(self._compaction, end, self._current_parent(), "unfinished")
            self._compaction = None
        if self._turn is not None and self._turn.span is not None:
            self._turn.span.set_attribute(END_REASON, "unfinished")
            self._turn.span.set_attribute(ERROR_TYPE, "unfinished")
            self._turn.span.set_status(Status(StatusCode.ERROR, "unfinished"))
            self._turn.span.end(end_time=max(end, self._turn.start))
            self._turn = None

    # --- one handler per event type ----------------------------------------------------------

    def _on_request_header(self, record: RequestHeader, now: int) -> None:
        self.params = dict(record.params)

    def _on_turn_start(self, record: TurnStart, now: int) -> None:
        if self._turn is not None:  # a turn/start without the previous end: close it first
            self.finish(now)
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        attrs = {OPERATION: "invoke_agent", **self._common()}
        if self.agent_name:
            attrs[AGENT_NAME] = self.agent_name
        if record.turn is not None:
            attrs[TURN] = record.turn
        if self.parent_session:
            attrs[PARENT_SESSION] = self.parent_session
        o = _Open(name, now, attrs)
        o.span = self.tracer.start_span(
            name, context=self._context(self.parent), kind=SpanKind.INTERNAL, attributes=attrs, start_time=now
        )
        self._turn = o

    def _on_turn_end(self, record: TurnEnd, now: int) -> None:
        o = self._turn
        if o is None or o.span is None:
            return
        kind = record.reason or "unknown"
        # the tools of a turn cut short end with it
        for call_id, t in list(self._tools.items()):
            self.tool_spans[call_id] = self._make(t, now, o.span, kind)
        self._tools.clear()
        o.span.set_attribute(END_REASON, kind)
        if kind not in ("completed", APPROVAL):  # a pause for a person is no error: the wait shows
            # as the gap to the resumed turn's span (docs/durable-runs.md)
            o.span.set_attribute(ERROR_TYPE, kind)
            o.span.set_status(Status(StatusCode.ERROR, kind))
        o.span.end(end_time=max(now, o.start))
        self._turn = None

    def _on_assistant_message(self, record: Reply, now: int) -> None:
        if not record.is_request:
            return  # a repaired copy of an earlier reply (load repair), not a request
        model = record.model
        attrs: dict[str, Any] = {OPERATION: "chat", **self._common()}
        if model:
            attrs[REQUEST_MODEL] = model
        if record.answered:  # the model that answered, when the log names it
            attrs[RESPONSE_MODEL] = record.answered
            model = model or record.answered
        if isinstance(self.params.get("max_tokens"), int):
            attrs[REQUEST_MAX_TOKENS] = self.params["max_tokens"]
        if isinstance(self.params.get("temperature"), (int, float)):
            attrs[REQUEST_TEMPERATURE] = float(self.params["temperature"])
        if record.turn is not None:
            attrs[TURN] = record.turn
        if record.step is not None:
            attrs[STEP] = record.step
        if record.seq >= 0:
            attrs[SEQ] = record.seq
        if not record.interrupted:
            attrs[RESPONSE_FINISH] = ("tool_calls",) if record.calls else ("stop",)
        usage = record.usage
        if usage is not None:
            attrs[INPUT_TOKENS] = usage.prompt_tokens
            attrs[OUTPUT_TOKENS] = usage.completion_tokens
            attrs[CACHE_READ_TOKENS] = usage.cache_hit_tokens
            if usage.cache_write_tokens:  # logged only when there were some
                attrs[CACHE_WRITE_TOKENS] = usage.cache_write_tokens
            attrs[REASONING_TOKENS] = usage.reasoning_tokens
        cost = record.cost
        if cost is not None and isinstance(cost.get("total"), (int, float)):
            attrs[COST] = float(cost["total"])
            if isinstance(cost.get("currency"), str):
                attrs[COST_CURRENCY] = cost["currency"]
        if self.capture_content:
            attrs[INPUT_MESSAGES] = _json(self._new_input)
            attrs[OUTPUT_MESSAGES] = _json([_plain(record.message)])
        self._new_input = []
        name = f"chat {model}" if model else "chat"
        o = _Open(name, self._last_time or now, attrs, SpanKind.CLIENT)
        self._make(o, now, self._current_parent(), "interrupted" if record.interrupted else None)

    def _on_tool_call(self, record: Call, now: int) -> None:
        name = record.name or ""
        call_id = record.call_id if record.call_id is not None else f"seq-{record.seq}"
        attrs: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
            **self._common(),
        }
        if record.seq >= 0:  # orders spans that start in the same millisecond
            attrs[SEQ] = record.seq
        if self.capture_content and record.arguments is not None:
            attrs[TOOL_ARGUMENTS] = record.arguments
        o = _Open(f"execute_tool {name}" if name else "execute_tool", now, attrs)
        # made now, not at its result: a sub-agent's spans need it as their parent
        o.span = self.tracer.start_span(
            o.name, context=self._context(self._current_parent()), attributes=attrs, start_time=now
        )
        self._tools[call_id] = o
        self.tool_spans[call_id] = o.span

    def _on_tool_result(self, record: Result, now: int) -> None:
        message = record.message
        o = self._tools.pop(record.call_id, None) if record.call_id is not None else None
        if o is None:  # a pruned copy, an imported result without its call: no span
            if self.capture_content:
                self._new_input.append(_plain(message))
            return
        if self.capture_content:
            self._new_input.append(_plain(message))
            o.span.set_attribute(TOOL_RESULT, _json(_plain(record.content)))
        if record.is_error:
            o.span.set_attribute(ERROR_TYPE, "tool_error")
            o.span.set_status(Status(StatusCode.ERROR, "tool_error"))
        o.span.end(end_time=max(now, o.start))

    def _on_compaction_start(self, record: CompactionStart, now: int) -> None:
        attrs: dict[str, Any] = {**self._common()}
        if record.id is not None:
            attrs[COMPACTION_ID] = record.id
        if record.trigger is not None:
            attrs[COMPACTION_TRIGGER] = record.trigger
        self._compaction = _Open("compaction", now, attrs)

    def _on_compaction_summary(self, record: CompactionSummary, now: int) -> None:
        o = self._compaction
        if o is None:
            return
        if record.folded is not None:
            o.attrs[COMPACTION_FOLDED] = len(record.folded)
        if record.tokens_before is not None:
            o.attrs[COMPACTION_TOKENS_BEFORE] = record.tokens_before
        if record.tokens_after is not None:
            o.attrs[COMPACTION_TOKENS_AFTER] = record.tokens_after
        if record.model is not None:
            o.attrs[REQUEST_MODEL] = record.model

    def _on_compaction_end(self, record: CompactionEnd, now: int) -> None:
        o = self._compaction
        if o is None:
            return
        self._compaction = None
        self._make(o, now, self._current_parent(), "compaction_error" if record.error else None)


#: the handler of each record type (the others make no span)
_HANDLERS: dict[type, Callable[[SpanBuilder, Any, int], None]] = {
    RequestHeader: SpanBuilder._on_request_header,
    TurnStart: SpanBuilder._on_turn_start,
    TurnEnd: SpanBuilder._on_turn_end,
    Reply: SpanBuilder._on_assistant_message,
    Call: SpanBuilder._on_tool_call,
    Result: SpanBuilder._on_tool_result,
    CompactionStart: SpanBuilder._on_compaction_start,
    CompactionSummary: SpanBuilder._on_compaction_summary,
    CompactionEnd: SpanBuilder._on_compaction_end,
}


def tracer_of(tracer_provider: Any = None) -> Tracer:
    """foldlog's tracer from ``tracer_provider`` (default: the global one)."""
    from foldlog._core import __version__

    if tracer_provider is None:
        return trace.get_tracer(INSTRUMENTATION, __version__)
    return tracer_provider.get_tracer(INSTRUMENTATION, __version__)  # type: ignore[no-any-return]


__all__ = ["SpanBuilder", "tracer_of"]
