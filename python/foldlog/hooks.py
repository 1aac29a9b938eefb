"""Agent and capability hooks: waterfalls with a single-use ``next``, serial hooks, notifications.

A waterfall listener is ``async def hook(ctx, next)`` (plain functions work too): it may call
``await next()`` once to pass on to the rest of the chain and get its result; not calling it
cuts the chain. Returning ``None`` means "the result of ``next`` if called, else the default".
Listeners run in registration order. Errors propagate to the dispatcher.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from foldlog.errors import HookError

if TYPE_CHECKING:
    from foldlog.agent import Agent
    from foldlog.providers.base import Request, ToolCall

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])
_log = logging.getLogger("foldlog.hooks")


# --- decisions -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Enter:
    """pre_step: proceed with these (possibly rewritten) claimed messages."""

    messages: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Reject:
    """pre_step: refuse the claimed input; the turn ends ``blocked``."""

    reason: str


def enter(messages: Sequence[Any]) -> Enter:
    """Proceed with these messages (strings or user message dicts)."""
    from foldlog.inbox import as_user_message

    return Enter(tuple(as_user_message(m) for m in messages))


def reject(reason: str) -> Reject:
    return Reject(reason)


@dataclass(frozen=True, slots=True)
class Allow:
    pass


@dataclass(frozen=True, slots=True)
class Deny:
    reason: str


@dataclass(frozen=True, slots=True)
class Ask:
    """Needs a human decision; resolved by ``agent.hooks.approver`` (denied when none is set)."""

    question: str


def allow() -> Allow:
    return Allow()


def deny(reason: str) -> Deny:
    return Deny(reason)


def ask(question: str) -> Ask:
    return Ask(question)


@dataclass(frozen=True, slots=True)
class Accept:
    pass


@dataclass(frozen=True, slots=True)
class Replace:
    content: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Block:
    reason: str


def accept() -> Accept:
    return Accept()


def replace(content: str, is_error: bool = False) -> Replace:
    return Replace(content, is_error)


def block(reason: str) -> Block:
    return Block(reason)


RETRY: Literal["retry"] = "retry"
RAISE: Literal["raise"] = "raise"


# --- contexts --------------------------------------------------------------------------------


@dataclass(slots=True)
class PreStepContext:
    agent: Agent
    turn: int
    step: int
    messages: list[dict[str, Any]]


@dataclass(slots=True)
class RequestContext:
    """``params`` (model, temperature, max_tokens, and extra provider params) may be changed;
    ``messages`` is a read-only view: requests always carry the session's messages."""

    agent: Agent
    turn: int
    step: int
    messages: Sequence[Any]
    params: dict[str, Any]


@dataclass(slots=True)
class RequestErrorContext:
    agent: Agent
    turn: int
    step: int
    error: BaseException
    attempt: int


@dataclass(slots=True)
class TurnStoppingContext:
    agent: Agent
    turn: int
    answer: str


@dataclass(slots=True)
class ToolContext:
    """What a tool hook (and a tool that asks for it) sees of the call in progress."""

    agent: Agent | None
    call: ToolCall
    arguments: dict[str, Any] = field(default_factory=dict)
    turn: int = 0
    step: int = 0

    def progress(self, message: str) -> None:
        if self.agent is not None:
            from foldlog.events import ToolProgress

            self.agent._emit(ToolProgress(self.call.id, self.call.name, message))


@dataclass(slots=True)
class ToolOutcome:
    """A tool's result. ``meta`` goes to the ``tool/result`` event's ``meta`` (e.g. ``utf8Replaced``)."""

    content: str
    is_error: bool = False
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class PostExecuteContext:
    agent: Agent | None
    call: ToolCall
    result: ToolOutcome


@dataclass(slots=True)
class StreamContext:
    agent: Agent
    request: Request


# --- dispatch --------------------------------------------------------------------------------


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


async def run_waterfall(
    listeners: Sequence[Callable[..., Any]],
    ctx: Any,
    terminal: Callable[[], Awaitable[T]],
    domain: str,
) -> T:
    """Run ``listeners`` in order around ``terminal``. Each ``next`` may be called once."""

    async def call(i: int) -> T:
        if i == len(listeners):
            return await terminal()
        listener = listeners[i]
        state: dict[str, Any] = {"called": False, "result": None}

        async def next_() -> T:
            if state["called"]:
                raise HookError(f"{domain} hook {_name(listener)} called next() twice")
            state["called"] = True
            state["result"] = await call(i + 1)
            return state["result"]  # type: ignore[no-any-return]

        out = await _maybe_await(listener(ctx, next_))
        if out is not None:
            return out  # type: ignore[no-any-return]
        if state["called"]:
            return state["result"]  # type: ignore[no-any-return]
        # Neither a value nor next(): the rest of the chain is cut and the plain default stands.
        return await terminal()

    return await call(0)


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


class Hooks:
    """Registration of every hook. Each method registers ``fn`` and returns it (decorator use)."""

    def __init__(self) -> None:
        self.pre_step_hooks: list[Callable[..., Any]] = []
        self.request_hooks: list[Callable[..., Any]] = []
        self.request_error_hooks: list[Callable[..., Any]] = []
        self.turn_stopping_hooks: list[Callable[..., Any]] = []
        self.status_hooks: list[Callable[..., Any]] = []
        self.tool_pre_execute_hooks: list[Callable[..., Any]] = []
        self.tool_execute_hooks: list[Callable[..., Any]] = []
        self.tool_post_execute_hooks: list[Callable[..., Any]] = []
        self.llm_stream_hooks: list[Callable[..., Any]] = []
        # resolves Ask decisions: fn(ctx, question) -> bool (sync or async); None denies
        self.approver: Callable[..., Any] | None = None

    def pre_step(self, fn: F) -> F:
        self.pre_step_hooks.append(fn)
        return fn

    def request(self, fn: F) -> F:
        self.request_hooks.append(fn)
        return fn

    def request_error(self, fn: F) -> F:
        self.request_error_hooks.append(fn)
        return fn

    def turn_stopping(self, fn: F) -> F:
        self.turn_stopping_hooks.append(fn)
        return fn

    def status(self, fn: F) -> F:
        self.status_hooks.append(fn)
        return fn

    def tool_pre_execute(self, fn: F) -> F:
        self.tool_pre_execute_hooks.append(fn)
        return fn

    def tool_execute(self, fn: F) -> F:
        self.tool_execute_hooks.append(fn)
        return fn

    def tool_post_execute(self, fn: F) -> F:
        self.tool_post_execute_hooks.append(fn)
        return fn

    def llm_stream(self, fn: F) -> F:
        self.llm_stream_hooks.append(fn)
        return fn

    def notify_status(self, status: Literal["idle", "running"]) -> None:
        for fn in self.status_hooks:
            try:
                out = fn(status)
                if inspect.iscoroutine(out):
                    out.close()
                    raise TypeError("status hooks are notifications and must be plain callables")
            except Exception:
                _log.exception("status hook %s raised", _name(fn))


__all__ = [
    "RAISE",
    "RETRY",
    "Accept",
    "Allow",
    "Ask",
    "Block",
    "Deny",
    "Enter",
    "Hooks",
    "PostExecuteContext",
    "PreStepContext",
    "Reject",
    "Replace",
    "RequestContext",
    "RequestErrorContext",
    "StreamContext",
    "ToolContext",
    "ToolOutcome",
    "TurnStoppingContext",
    "accept",
    "allow",
    "ask",
    "block",
    "deny",
    "enter",
    "reject",
    "replace",
]
