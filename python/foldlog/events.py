"""UI events: plain dataclasses delivered, in order, to the agent's sink.

The sink is a front end's view of a run. It never feeds back into the log: a slow or failing
sink cannot corrupt the session (exceptions are caught and reported once through logging).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from foldlog.errors import ConfigTypeError

if TYPE_CHECKING:
    from foldlog.log.grammar.types import Usage as ProviderUsage

UsageSource = Literal["executor", "compaction", "subagent"]

_log = logging.getLogger("foldlog.sink")


@dataclass(frozen=True, slots=True)
class TurnStarted:
    turn: int


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    turn: int = 0
    step: int = 0


@dataclass(frozen=True, slots=True)
class Reasoning:
    text: str
    turn: int = 0
    step: int = 0


@dataclass(frozen=True, slots=True)
class ToolDispatch:
    """A tool call. ``partial`` is True for the early one sent as soon as the name streams in."""

    id: str
    name: str
    arguments: str = ""
    partial: bool = False


@dataclass(frozen=True, slots=True)
class ToolResult:
    id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class ToolProgress:
    id: str
    name: str
    message: str


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int
    completion_tokens: int
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    hit_rate: float = 0.0
    cost: float | None = None
    source: UsageSource = "executor"

    @classmethod
    def of(cls, usage: ProviderUsage, source: UsageSource, cost: float | None = None) -> Usage:
        """The event for a provider's reported usage (the agent's and the compactor's)."""
        return cls(
            usage.prompt_tokens,
            usage.completion_tokens,
            usage.cache_hit_tokens,
            usage.cache_miss_tokens,
            usage.cache_hit_rate,
            cost,
            source,
        )


@dataclass(frozen=True, slots=True)
class Notice:
    message: str
    level: Literal["info", "warn"] = "info"


@dataclass(frozen=True, slots=True)
class Retrying:
    reason: str
    attempt: int


@dataclass(frozen=True, slots=True)
class Steer:
    content: str


@dataclass(frozen=True, slots=True)
class CompactionStarted:
    trigger: str
    focus: str | None = None


@dataclass(frozen=True, slots=True)
class CompactionDone:
    trigger: str
    folded: int
    summary: str
    archive: str | None = None
    mechanical: bool = False


@dataclass(frozen=True, slots=True)
class TurnDone:
    turn: int
    reason: str
    error: str | None = None


Event = (
    TurnStarted
    | Text
    | Reasoning
    | ToolDispatch
    | ToolResult
    | ToolProgress
    | Usage
    | Notice
    | Retrying
    | Steer
    | CompactionStarted
    | CompactionDone
    | TurnDone
)
Sink = Callable[[Any], Any]


class SinkDispatcher:
    """Delivers events to a user sink in order; a failing sink is reported once, never raised."""

    __slots__ = ("_reported", "sink")

    def __init__(self, sink: Sink | None) -> None:
        self.sink = sink
        self._reported = False

    def __call__(self, event: Any) -> None:
        sink = self.sink
        if sink is None:
            return
        try:
            result = sink(event)
            if inspect.isawaitable(result):
                # An async sink would reorder events if scheduled; it must be a plain callable.
                if inspect.iscoroutine(result):
                    result.close()
                raise ConfigTypeError("the sink must be a plain (non-async) callable")
        except Exception:
            if not self._reported:
                self._reported = True
                _log.exception("foldlog sink %r raised; further sink errors are not reported", sink)


__all__ = [
    "CompactionDone",
    "CompactionStarted",
    "Event",
    "Notice",
    "Reasoning",
    "Retrying",
    "Sink",
    "SinkDispatcher",
    "Steer",
    "Text",
    "ToolDispatch",
    "ToolProgress",
    "ToolResult",
    "TurnDone",
    "TurnStarted",
    "Usage",
]
