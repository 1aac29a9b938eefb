"""What a tool, and a tool hook, may use of the agent that runs it.

The tools layer never sees the agent itself: a call's :class:`ToolContext` holds the running
agent as a :class:`ToolHost` — send a progress note to the sink, cancel the run, hand work to a
sub-agent — and the :class:`ToolRunner` gets the same host. :class:`ToolLimits` are the bounds a
batch runs under, given to the runner once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from foldlog.log.grammar.types import ToolCall

#: default bound on a call's arguments (UTF-8 bytes): a larger call gets an error result
ARGUMENT_LIMIT = 4 * 1024 * 1024


class ToolHost(Protocol):
    """The agent as a running tool sees it (`foldlog.Agent` is one)."""

    def emit(self, event: Any) -> None:
        """Send a UI event (a :mod:`foldlog.events` dataclass) to the agent's sink."""
        ...

    def cancel(self) -> bool:
        """Stop the running turn (``run`` raises :class:`foldlog.RunCancelled`)."""
        ...

    async def delegate(self, prompt: str, *, max_steps: int | None, call_id: str) -> str | ToolOutcome:
        """Run ``prompt`` in a sub-agent with a fresh context and this agent's tools (but the
        ``task`` tool), provider and policies; its final answer (a `ToolOutcome` carrying the
        sub-agent's spending in its ``meta``). ``call_id``: the delegating call, which the
        sub-agent's tool events are nested under."""
        ...


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """The bounds a batch of calls runs under (from `foldlog.Options`; see docs/tools.md)."""

    max_parallel: int = 8  # read-only calls in flight at once
    output_limit: int = 32768  # UTF-8 bytes of a result kept (head and tail)
    timeout: float | None = None  # seconds per call (a tool's own timeout wins); None: unbounded
    argument_limit: int | None = ARGUMENT_LIMIT  # UTF-8 bytes of a call's arguments


@dataclass(slots=True)
class ToolContext:
    """What a tool (and a tool hook) sees of the call in progress. ``agent`` is the running agent
    as a :class:`ToolHost` (``None`` when a runner is used without one, as in tests)."""

    agent: ToolHost | None
    call: ToolCall
    arguments: dict[str, Any] = field(default_factory=dict)
    turn: int = 0
    step: int = 0

    def progress(self, message: str) -> None:
        """Tell the sink how the call is going (a ``ToolProgress`` event)."""
        if self.agent is not None:
            from foldlog.events import ToolProgress

            self.agent.emit(ToolProgress(self.call.id, self.call.name, message))


@dataclass(slots=True)
class ToolOutcome:
    """A tool's result: text, or a list of content blocks (``foldlog.tools.content``: text and
    images, …). ``meta`` goes to the ``tool/result`` event's ``meta`` (e.g. ``utf8Replaced``)."""

    content: str | list[dict[str, Any]]
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


__all__ = ["ARGUMENT_LIMIT", "ToolContext", "ToolHost", "ToolLimits", "ToolOutcome"]
