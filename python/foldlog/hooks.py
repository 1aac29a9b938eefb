"""Agent and capability hooks: waterfalls with a single-use ``next``, serial hooks, notifications.

A waterfall listener is ``async def hook(ctx, next)`` (plain functions work too). It passes on
with ``return await next()`` (``next`` runs the rest of the chain and then the default call, and
returns their decision; it may be called once). A listener that returns without calling
``next`` vetoes the rest of the chain *and* the default: its return value is the decision, and
returning nothing is a refusal (:class:`HookRefused`), so a later guard is never skipped while
the guarded call still happens. Returning nothing *after* ``next()`` keeps what ``next``
returned (or lets its error stand). Listeners run in registration order. What a refusal means
at each hook point is in ``docs/hooks.md``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from foldlog.errors import ConfigTypeError, HookError, HookRefused, InvalidEventError, InvalidHookError
from foldlog.tools.host import ToolContext, ToolOutcome

if TYPE_CHECKING:
    from foldlog.log.grammar.types import ToolCall
    from foldlog.log.session import Session
    from foldlog.providers.base import Request
    from foldlog.tools.host import ToolHost

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
    """pre_step, request, llm_stream: refuse; the turn ends ``blocked`` with ``reason``."""

    reason: str


def as_user_message(message: Any, source: str | None = None) -> dict[str, Any]:
    """The user message an input stands for (a string or a user message dict): what the inbox
    queues and what ``enter`` passes on."""
    if isinstance(message, str):
        out: dict[str, Any] = {"role": "user", "content": message}
    elif isinstance(message, dict):
        if "content" not in message:
            raise InvalidEventError("a user message dict needs a 'content' key")
        out = dict(message)
        role = out.setdefault("role", "user")
        if role != "user":
            raise InvalidEventError(f"inbox messages must have role 'user', got {role!r}")
    else:
        raise ConfigTypeError(f"a message must be a str or a dict, got {type(message).__name__}")
    if source is not None:
        out.setdefault("source", source)
    return out


def enter(messages: Sequence[Any]) -> Enter:
    """Proceed with these messages (strings or user message dicts)."""
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
    content: str | list[dict[str, Any]]
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Block:
    reason: str


def accept() -> Accept:
    return Accept()


def replace(content: str | list[dict[str, Any]], is_error: bool = False) -> Replace:
    return Replace(content, is_error)


def block(reason: str) -> Block:
    return Block(reason)


RETRY: Literal["retry"] = "retry"
RAISE: Literal["raise"] = "raise"


# --- contexts --------------------------------------------------------------------------------


class HookAgent(Protocol):
    """The agent as its hooks see it, in their contexts' ``agent`` (a `foldlog.Agent` is one):
    its session and model, its hooks, the inbox, the sink and cancellation. A protocol, so that
    this module — vocabulary every layer imports, the agent and the tools included — never names
    the agent's class (no import cycle, not even a typing one: tests/api/test_typing_cycles.py)."""

    @property
    def session(self) -> Session: ...

    @property
    def model(self) -> str | None: ...

    @property
    def hooks(self) -> Hooks: ...

    @property
    def running(self) -> bool: ...

    def emit(self, event: Any) -> None:
        """Send a UI event (a :mod:`foldlog.events` dataclass) to the agent's sink."""

    def followup(self, message: str | Mapping[str, Any]) -> None:
        """Queue a new turn (wakes the loop)."""

    def steer(self, message: str | Mapping[str, Any]) -> None:
        """Join the next step of the running turn (wakes the loop; continues a finishing turn)."""

    def inject(self, message: str | Mapping[str, Any]) -> None:
        """Join the next step, whenever that is (does not wake the loop)."""

    def cancel(self) -> bool:
        """Stop the running turn (``run`` raises :class:`foldlog.RunCancelled`)."""


@dataclass(slots=True)
class PreStepContext:
    agent: HookAgent
    turn: int
    step: int
    messages: list[dict[str, Any]]


@dataclass(slots=True)
class RequestContext:
    """``params`` (model, temperature, max_tokens, and extra provider params) may be changed;
    ``messages`` is a read-only view: requests always carry the session's messages."""

    agent: HookAgent
    turn: int
    step: int
    messages: Sequence[Any]
    params: dict[str, Any]


@dataclass(slots=True)
class RequestErrorContext:
    agent: HookAgent
    turn: int
    step: int
    error: BaseException
    attempt: int


@dataclass(slots=True)
class TurnStoppingContext:
    agent: HookAgent
    turn: int
    answer: str


@dataclass(slots=True)
class PostExecuteContext:
    agent: ToolHost | None
    call: ToolCall
    result: ToolOutcome


@dataclass(slots=True)
class StreamContext:
    """``purpose``: ``"step"`` (the agent's own request) or ``"compaction"`` (a summary call)."""

    agent: HookAgent
    request: Request
    purpose: Literal["step", "compaction"] = "step"


# --- dispatch --------------------------------------------------------------------------------

#: what each waterfall guards, for the refusal message
GUARDED: dict[str, str] = {
    "pre_step": "the step",
    "request": "the model request",
    "request_error": "a retry",
    "llm_stream": "the model request",
    "tool_pre_execute": "the tool call",
    "tool_execute": "the tool call",
    "tool_post_execute": "the tool result",
}


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def refusal(domain: str, listener: Callable[..., Any]) -> HookRefused:
    name = _name(listener)
    return HookRefused(
        f"{domain} hook {name} returned without calling next() and without a decision, which refuses "
        f"{GUARDED.get(domain, 'the call')} (a listener passes on with `return await next()`)",
        hook=domain,
        listener=name,
    )


def rejection(domain: str, listener: str, reason: str) -> HookRefused:
    """``reject(reason)`` from a listener of a hook point whose decision is not a verdict
    (``request``, ``llm_stream``): raised through every outer ``next()`` like a refusal."""
    return HookRefused(
        f"{domain} hook {listener} refused {GUARDED.get(domain, 'the call')}: {reason}",
        hook=domain,
        listener=listener,
    )


async def run_waterfall(
    listeners: Sequence[Callable[..., Any]],
    ctx: Any,
    terminal: Callable[[], Awaitable[T]],
    domain: str,
    decision: Callable[[Any, str], T] | None = None,
) -> T:
    """Run ``listeners`` in order around ``terminal`` (the default call, reached only through
    every listener's ``next``). ``decision(value, listener_name)`` checks a listener's return
    value and makes it the hook point's decision type. Raises :class:`HookRefused` when a
    listener returns nothing without calling ``next`` (also out of every outer ``next()``, so an
    outer listener that returns nothing lets the refusal stand)."""

    async def call(i: int) -> T:
        if i == len(listeners):
            return await terminal()
        listener = listeners[i]
        called = False
        result: Any = None
        failure: BaseException | None = None

        async def next_() -> T:
            nonlocal called, result, failure
            if called:
                raise HookError(f"{domain} hook {_name(listener)} called next() twice")
            called = True
            try:
                result = await call(i + 1)
            except BaseException as e:
                failure = e
                raise
            return result  # type: ignore[no-any-return]

        out = await _maybe_await(listener(ctx, next_))
        if out is not None:
            if decision is not None:
                return decision(out, _name(listener))
            return out  # type: ignore[no-any-return]
        if failure is not None:
            # nothing returned after a failed next(): the failure (a refusal, an error) stands
            raise failure
        if called:
            return result  # type: ignore[no-any-return]
        raise refusal(domain, listener)

    return await call(0)


def pre_step_decision(value: Any, listener: str) -> Enter | Reject:
    if isinstance(value, Enter | Reject):
        return value
    raise HookError(f"pre_step hook {listener} must return enter(...) or reject(...), got {value!r}")


def request_decision(value: Any, listener: str) -> dict[str, Any]:
    if isinstance(value, dict):
        return value
    if isinstance(value, Reject):
        raise rejection("request", listener, value.reason)
    raise HookError(f"request hook {listener} must return the params dict or reject(...), got {value!r}")


def request_error_decision(value: Any, listener: str) -> str:
    if value in (RETRY, RAISE):
        return str(value)
    raise HookError(f'request_error hook {listener} must return "retry" or "raise", got {value!r}')


def stream_decision(value: Any, listener: str) -> Any:
    if hasattr(value, "__aiter__"):
        return value
    if isinstance(value, Reject):
        raise rejection("llm_stream", listener, value.reason)
    raise HookError(
        f"llm_stream hook {listener} must return an async iterator of chunks or reject(...), got {value!r}"
    )


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


def _check_listener(point: str, fn: Callable[..., Any], args: tuple[str, ...]) -> None:
    """Refuse at registration a listener its hook point cannot call (an old one-argument policy
    registered on a waterfall would otherwise refuse every call at run time)."""
    if not callable(fn):
        raise InvalidHookError(f"{point} hooks must be callables, got {fn!r}")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # builtins without a signature: called as they are
    try:
        sig.bind(*args)
    except TypeError:
        why = f": {point} is a waterfall (pass on with `return await next()`)" if "next" in args else ""
        raise InvalidHookError(
            f"{point} listener {_name(fn)}{sig} must take ({', '.join(args)}){why}"
        ) from None


class Hooks:
    """Registration of every hook. Each method registers ``fn`` and returns it (decorator use).

    Waterfalls (``fn(ctx, next)``): ``pre_step``, ``request``, ``request_error``, ``llm_stream``,
    ``tool_pre_execute``, ``tool_execute``, ``tool_post_execute``. Serial: ``turn_stopping``
    (``fn(ctx)``); notification: ``status`` (``fn(status)``).
    """

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

    def _add(self, point: str, fn: F, args: tuple[str, ...] = ("ctx", "next")) -> F:
        _check_listener(point, fn, args)
        getattr(self, f"{point}_hooks").append(fn)
        return fn

    def pre_step(self, fn: F) -> F:
        return self._add("pre_step", fn)

    def request(self, fn: F) -> F:
        return self._add("request", fn)

    def request_error(self, fn: F) -> F:
        return self._add("request_error", fn)

    def turn_stopping(self, fn: F) -> F:
        return self._add("turn_stopping", fn, ("ctx",))

    def status(self, fn: F) -> F:
        return self._add("status", fn, ("status",))

    def tool_pre_execute(self, fn: F) -> F:
        return self._add("tool_pre_execute", fn)

    def tool_execute(self, fn: F) -> F:
        return self._add("tool_execute", fn)

    def tool_post_execute(self, fn: F) -> F:
        return self._add("tool_post_execute", fn)

    def llm_stream(self, fn: F) -> F:
        return self._add("llm_stream", fn)

    def share_capabilities(self, other: Hooks) -> None:
        """Apply ``other``'s capability hooks (tool and stream policies, the approver) here too:
        a sub-agent runs under its parent's policies. The lists are shared, not copied."""
        self.tool_pre_execute_hooks = other.tool_pre_execute_hooks
        self.tool_execute_hooks = other.tool_execute_hooks
        self.tool_post_execute_hooks = other.tool_post_execute_hooks
        self.llm_stream_hooks = other.llm_stream_hooks
        self.approver = other.approver

    def notify_status(self, status: Literal["idle", "running"]) -> None:
        for fn in self.status_hooks:
            try:
                out = fn(status)
                if inspect.iscoroutine(out):
                    out.close()
                    raise InvalidHookError("status hooks are notifications and must be plain callables")
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
    "HookAgent",
    "HookRefused",
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
    "as_user_message",
    "ask",
    "block",
    "deny",
    "enter",
    "reject",
    "replace",
    "run_waterfall",
]
