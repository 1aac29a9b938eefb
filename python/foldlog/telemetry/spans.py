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
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from foldlog.errors import ConfigError

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


def _ns(event: Mapping[str, Any]) -> int:
    t = event.get("time")
    return int(t) * 1_000_000 if isinstance(t, (int, float)) and not isinstance(t, bool) else 0


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
    model: str | None = None
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
        kind = event.get("type")
        data = event.get("data")
        if kind == "request/header" and isinstance(data, Mapping):
            self._header(data)
        self._last_time = _ns(event) or self._last_time

    def feed(self, event: Mapping[str, Any]) -> None:
        kind = event.get("type")
        data = event.get("data")
        data = data if isinstance(data, Mapping) else {}
        now = _ns(event)
        handler = _HANDLERS.get(str(kind))
        if handler is not None:
            handler(self, data, now, event)
        elif kind in ("user/message", "system/message") and self.capture_content:
            self._new_input.append(_plain(data))
        if kind != "assistant/chunk":
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

    def _header(self, data: Mapping[str, Any]) -> None:
        model = data.get("model")
        self.model = model if isinstance(model, str) else None
        params = data.get("params")
        self.params = dict(params) if isinstance(params, Mapping) else {}

    def _on_request_header(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        self._header(data)

    def _on_turn_start(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        if self._turn is not None:  # a turn/start without the previous end: close it first
            self.finish(now)
        name = f"invoke_agent {self.agent_name}" if self.agent_name else "invoke_agent"
        attrs = {OPERATION: "invoke_agent", **self._common()}
        if self.agent_name:
            attrs[AGENT_NAME] = self.agent_name
        if isinstance(data.get("turn"), int):
            attrs[TURN] = data["turn"]
        if self.parent_session:
            attrs[PARENT_SESSION] = self.parent_session
        o = _Open(name, now, attrs)
        o.span = self.tracer.start_span(
            name, context=self._context(self.parent), kind=SpanKind.INTERNAL, attributes=attrs, start_time=now
        )
        self._turn = o

    def _on_turn_end(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        o = self._turn
        if o is None or o.span is None:
            return
        reason = data.get("reason")
        kind = reason.get("kind") if isinstance(reason, Mapping) else None
        kind = kind if isinstance(kind, str) else "unknown"
        # the tools of a turn cut short end with it
        for call_id, t in list(self._tools.items()):
            self.tool_spans[call_id] = self._make(t, now, o.span, kind)
        self._tools.clear()
        o.span.set_attribute(END_REASON, kind)
        if kind != "completed":
            o.span.set_attribute(ERROR_TYPE, kind)
            o.span.set_status(Status(StatusCode.ERROR, kind))
        o.span.end(end_time=max(now, o.start))
        self._turn = None

    def _on_assistant_message(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        if event.get("surfaceOp", "append") != "append":
            return  # a repaired copy of an earlier reply (load repair), not a request
        model = self.model
        attrs: dict[str, Any] = {OPERATION: "chat", **self._common()}
        if model:
            attrs[REQUEST_MODEL] = model
        answered = data.get("model")  # the model that answered, when the log names it
        if isinstance(answered, str) and answered:
            attrs[RESPONSE_MODEL] = answered
            model = model or answered
        if isinstance(self.params.get("max_tokens"), int):
            attrs[REQUEST_MAX_TOKENS] = self.params["max_tokens"]
        if isinstance(self.params.get("temperature"), (int, float)):
            attrs[REQUEST_TEMPERATURE] = float(self.params["temperature"])
        for key, name in (("turn", TURN), ("step", STEP)):
            if isinstance(data.get(key), int):
                attrs[name] = data[key]
        if isinstance(event.get("seq"), int):
            attrs[SEQ] = event["seq"]
        message = data.get("message")
        message = message if isinstance(message, Mapping) else {}
        interrupted = bool(data.get("interrupted"))
        if not interrupted:
            attrs[RESPONSE_FINISH] = ("tool_calls",) if message.get("tool_calls") else ("stop",)
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            for key, name in (
                ("promptTokens", INPUT_TOKENS),
                ("completionTokens", OUTPUT_TOKENS),
                ("cacheHitTokens", CACHE_READ_TOKENS),
                ("cacheWriteTokens", CACHE_WRITE_TOKENS),
                ("reasoningTokens", REASONING_TOKENS),
            ):
                v = usage.get(key)
                if isinstance(v, int) and not isinstance(v, bool):
                    attrs[name] = v
        cost = data.get("cost")
        if isinstance(cost, Mapping) and isinstance(cost.get("total"), (int, float)):
            attrs[COST] = float(cost["total"])
            if isinstance(cost.get("currency"), str):
                attrs[COST_CURRENCY] = cost["currency"]
        if self.capture_content:
            attrs[INPUT_MESSAGES] = _json(self._new_input)
            attrs[OUTPUT_MESSAGES] = _json([_plain(message)])
        self._new_input = []
        name = f"chat {model}" if model else "chat"
        o = _Open(name, self._last_time or now, attrs, SpanKind.CLIENT)
        self._make(o, now, self._current_parent(), "interrupted" if interrupted else None)

    def _on_tool_call(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        name = data.get("name")
        name = name if isinstance(name, str) else ""
        call_id = data.get("callId")
        call_id = call_id if isinstance(call_id, str) else f"seq-{event.get('seq')}"
        attrs: dict[str, Any] = {
            OPERATION: "execute_tool",
            TOOL_NAME: name,
            TOOL_CALL_ID: call_id,
            TOOL_TYPE: "function",
            **self._common(),
        }
        if isinstance(event.get("seq"), int):  # orders spans that start in the same millisecond
            attrs[SEQ] = event["seq"]
        if self.capture_content and isinstance(data.get("arguments"), str):
            attrs[TOOL_ARGUMENTS] = data["arguments"]
        o = _Open(f"execute_tool {name}" if name else "execute_tool", now, attrs)
        # made now, not at its result: a sub-agent's spans need it as their parent
        o.span = self.tracer.start_span(
            o.name, context=self._context(self._current_parent()), attributes=attrs, start_time=now
        )
        self._tools[call_id] = o
        self.tool_spans[call_id] = o.span

    def _on_tool_result(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        message = data.get("message")
        message = message if isinstance(message, Mapping) else {}
        call_id = message.get("toolCallId")
        o = self._tools.pop(call_id, None) if isinstance(call_id, str) else None
        if o is None:  # a pruned copy, an imported result without its call: no span
            if self.capture_content:
                self._new_input.append(_plain(message))
            return
        if self.capture_content:
            self._new_input.append(_plain(message))
            o.span.set_attribute(TOOL_RESULT, _json(_plain(message.get("content"))))
        if message.get("isError"):
            o.span.set_attribute(ERROR_TYPE, "tool_error")
            o.span.set_status(Status(StatusCode.ERROR, "tool_error"))
        o.span.end(end_time=max(now, o.start))

    def _on_compaction_start(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        attrs: dict[str, Any] = {**self._common()}
        for key, name in (("id", COMPACTION_ID), ("trigger", COMPACTION_TRIGGER)):
            if isinstance(data.get(key), str):
                attrs[name] = data[key]
        self._compaction = _Open("compaction", now, attrs)

    def _on_compaction_summary(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        o = self._compaction
        if o is None:
            return
        folded = data.get("folded")
        if isinstance(folded, list):
            o.attrs[COMPACTION_FOLDED] = len(folded)
        for key, name in (
            ("tokensBefore", COMPACTION_TOKENS_BEFORE),
            ("tokensAfter", COMPACTION_TOKENS_AFTER),
        ):
            if isinstance(data.get(key), int):
                o.attrs[name] = data[key]
        if isinstance(data.get("model"), str):
            o.attrs[REQUEST_MODEL] = data["model"]

    def _on_compaction_end(self, data: Mapping[str, Any], now: int, event: Mapping[str, Any]) -> None:
        o = self._compaction
        if o is None:
            return
        self._compaction = None
        error = data.get("error")
        self._make(o, now, self._current_parent(), "compaction_error" if error else None)


_HANDLERS = {
    "request/header": SpanBuilder._on_request_header,
    "turn/start": SpanBuilder._on_turn_start,
    "turn/end": SpanBuilder._on_turn_end,
    "assistant/message": SpanBuilder._on_assistant_message,
    "tool/call": SpanBuilder._on_tool_call,
    "tool/result": SpanBuilder._on_tool_result,
    "compaction/start": SpanBuilder._on_compaction_start,
    "compaction/summary": SpanBuilder._on_compaction_summary,
    "compaction/end": SpanBuilder._on_compaction_end,
}


def tracer_of(tracer_provider: Any = None) -> Tracer:
    """foldlog's tracer from ``tracer_provider`` (default: the global one)."""
    from foldlog._core import __version__

    if tracer_provider is None:
        return trace.get_tracer(INSTRUMENTATION, __version__)
    return tracer_provider.get_tracer(INSTRUMENTATION, __version__)  # type: ignore[no-any-return]


__all__ = ["SpanBuilder", "tracer_of"]
