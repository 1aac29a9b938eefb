"""Live tracing: `instrument(agent)` builds the spans of the agent's session as its events are
appended (a session subscriber), and of each sub-agent's session under the call that ran it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from foldlog.providers.base import declared
from foldlog.telemetry.spans import SpanBuilder, tracer_of

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider


def provider_name(provider: Provider) -> str | None:
    """``gen_ai.provider.name`` of a foldlog provider: its `genai-prices` id (``deepseek``,
    ``openai``) when it declares one, else ``None`` (the attribute is left out)."""
    return declared(provider).price_provider or None


class Instrumentation:
    """What `instrument` set up; `close` stops tracing (and closes spans left open)."""

    def __init__(
        self,
        tracer_provider: Any = None,
        *,
        capture_content: bool = False,
        agent_name: str | None = None,
    ) -> None:
        self._tracer = tracer_of(tracer_provider)
        self._capture = capture_content
        self._agent_name = agent_name
        self._undo: list[Callable[[], None]] = []
        self._builders: list[SpanBuilder] = []

    def attach_session(
        self,
        session: Session,
        *,
        provider: str | None = None,
        parent_span: Any = None,
        parent_session: str | None = None,
    ) -> SpanBuilder:
        """Trace ``session``'s events from now on (earlier ones only set the builder's state)."""
        builder = SpanBuilder(
            self._tracer,
            session_id=session.id,
            provider_name=provider,
            agent_name=self._agent_name,
            capture_content=self._capture,
            parent=parent_span,
            parent_session=parent_session,
        )
        for ev in session.events:  # what happened before: state only
            builder.prime(ev)
        self._builders.append(builder)
        self._undo.append(session.stream.subscribe(builder.feed))
        return builder

    def attach(self, agent: Agent, parent_span: Any = None, parent_session: str | None = None) -> SpanBuilder:
        """Trace ``agent``'s session, and each sub-agent's under the call that ran it."""
        session: Session = agent.session
        builder = self.attach_session(
            session,
            provider=provider_name(agent.provider),
            parent_span=parent_span,
            parent_session=parent_session,
        )

        def child_started(child: Agent, call_id: str) -> None:
            self.attach(child, builder.tool_spans.get(call_id), session.id)

        agent.child_watchers.append(child_started)
        self._undo.append(lambda: _discard(agent.child_watchers, child_started))
        return builder

    def close(self) -> None:
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()
        for b in self._builders:
            b.finish()


def _discard(items: list[Any], item: Any) -> None:
    if item in items:
        items.remove(item)


def instrument(
    agent: Agent,
    tracer_provider: Any = None,
    *,
    capture_content: bool = False,
    agent_name: str | None = None,
) -> Instrumentation:
    """Trace ``agent`` from now on: spans per the GenAI semantic conventions (see
    `foldlog.telemetry.spans`) to ``tracer_provider`` (default: the global one).
    ``capture_content``: record message contents, tool arguments and results (off by default)."""
    tracing = Instrumentation(tracer_provider, capture_content=capture_content, agent_name=agent_name)
    tracing.attach(agent)
    return tracing


def trace_session(
    session: Session,
    tracer_provider: Any = None,
    *,
    provider_name: str | None = None,
    capture_content: bool = False,
) -> Instrumentation:
    """Trace a bare session's events as they are appended (a writer that is not an `Agent`: an
    importer, a host of its own)."""
    tracing = Instrumentation(tracer_provider, capture_content=capture_content)
    tracing.attach_session(session, provider=provider_name)
    return tracing


__all__ = ["Instrumentation", "instrument", "provider_name", "trace_session"]
