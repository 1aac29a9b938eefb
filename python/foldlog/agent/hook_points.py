"""Where the agent runs its hooks (docs/hooks.md): the waterfalls of the `pre_step`, `request`,
`llm_stream` and `request_error` points, the `turn_stopping` notifications, and how a hook's
refusal or error ends the turn. A mixin of `foldlog.agent.loop.Agent` (kept apart so the loop
module stays one job)."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from foldlog.errors import HookError, HookRefused
from foldlog.hooks import (
    Enter,
    PreStepContext,
    Reject,
    TurnStoppingContext,
    pre_step_decision,
    run_waterfall,
)

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent
    from foldlog.agent.recorder import StepRecorder
    from foldlog.hooks import Hooks


class _TurnEnd(Exception):
    """Control flow: ends the running turn with an end reason (``kind``), the turn/end event's
    ``detail`` and, for errors, the message to raise."""

    def __init__(self, kind: str, detail: Mapping[str, Any] | None = None, error: str | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = dict(detail or {})
        self.error = error


class HookPoints:
    """Hook running for `Agent` (which provides the attributes declared here)."""

    hooks: Hooks
    _rec: StepRecorder

    @property
    def _agent(self) -> Agent:
        return cast("Agent", self)  # the hooks' contexts name the agent they run in

    async def _pre_step(self, turn: int, step: int, claimed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        hooks = self.hooks.pre_step_hooks
        if not hooks:
            return claimed
        ctx = PreStepContext(self._agent, turn, step, list(claimed))

        async def default() -> Enter:
            return Enter(tuple(ctx.messages))

        decision = await self._waterfall("pre_step", hooks, ctx, default, pre_step_decision)
        if isinstance(decision, Reject):
            raise _TurnEnd("blocked", {"message": decision.reason}, decision.reason)
        if not decision.messages and step == 1:
            raise _TurnEnd("blocked", {"message": "the input was rewritten to nothing"}, "empty input")
        return [dict(m) for m in decision.messages]

    async def _waterfall(
        self,
        domain: str,
        listeners: Sequence[Callable[..., Any]],
        ctx: Any,
        default: Callable[[], Any],
        decision: Callable[[Any, str], Any] | None = None,
    ) -> Any:
        """An agent-side waterfall: a refusal ends the turn ``blocked`` naming the listener (the
        open step is closed first); a listener's error ends it ``error``."""
        try:
            return await self._hook(domain, run_waterfall(listeners, ctx, default, domain, decision))
        except HookRefused as r:
            self._rec.close_step()
            raise _TurnEnd(
                "blocked", {"message": str(r), "hook": r.hook, "listener": r.listener}, str(r)
            ) from None

    async def _turn_stopping(self, turn: int, answer: str) -> None:
        for fn in self.hooks.turn_stopping_hooks:
            await self._hook("turn_stopping", _call(fn, TurnStoppingContext(self._agent, turn, answer)))

    async def _hook(self, domain: str, awaitable: Any) -> Any:
        try:
            return await awaitable
        except (HookError, _TurnEnd, asyncio.CancelledError):
            raise
        except Exception as e:
            raise HookError(f"{domain} hook raised {type(e).__name__}: {e}") from e


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    out = fn(*args)
    if inspect.isawaitable(out):
        out = await out
    return out
