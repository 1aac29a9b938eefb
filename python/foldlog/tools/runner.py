"""Running one batch of tool calls: lookup, argument checks, policy hooks, concurrency, output cap.

Every failure the model can act on becomes an error result (``error: …``) rather than an
exception: unknown tools, invalid JSON, invalid arguments (with the schema), tool exceptions,
timeouts and hook errors. Results come back in call order whatever order they finished in.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog.hooks import (
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    PostExecuteContext,
    Replace,
    ToolContext,
    ToolOutcome,
    run_waterfall,
)

if TYPE_CHECKING:
    from foldlog.agent import Agent
    from foldlog.hooks import Hooks
    from foldlog.providers.base import ToolCall
    from foldlog.tools.registry import Tool, ToolRegistry

LOOP_GUARD_RUNS = 3
LOOP_GUARD_LINE = (
    "[loop guard] these exact calls have failed {n} times in a row with the same errors; "
    "stop repeating them and change approach."
)


def cap_output(text: str, limit: int) -> str:
    """Keep the first and last ``limit // 2`` UTF-8 bytes (cut on character boundaries) with a marker."""
    if len(text) * 4 <= limit:  # fast path: cannot exceed the limit even if every char took 4 bytes
        return text
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[len(data) - half :].decode("utf-8", errors="ignore")
    dropped = len(data) - len(head.encode("utf-8")) - len(tail.encode("utf-8"))
    return f"{head}\n\n[… {dropped} bytes of tool output omitted …]\n\n{tail}"


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


@dataclass(slots=True)
class CallResult:
    call: ToolCall
    content: str
    is_error: bool


class ToolRunner:
    """Runs batches for one agent; keeps the loop-guard memory between batches."""

    def __init__(self, registry: ToolRegistry, agent: Agent | None, hooks: Hooks | None) -> None:
        self.registry = registry
        self.agent = agent
        self.hooks = hooks
        self._guard_key: tuple[Any, ...] | None = None
        self._guard_runs = 0
        # state of the batch in progress, read by the agent when the batch is cancelled
        self.started: set[int] = set()
        self.done: dict[int, CallResult] = {}

    async def run_batch(
        self,
        calls: Sequence[ToolCall],
        *,
        max_parallel: int,
        output_limit: int,
        timeout: float | None,
        turn: int = 0,
        step: int = 0,
    ) -> list[CallResult]:
        self.started = set()
        self.done = {}
        sem = asyncio.Semaphore(max_parallel)
        i = 0
        while i < len(calls):
            j = i
            while j < len(calls) and self._read_only(calls[j].name):
                j += 1
            if j - i > 1:
                # consecutive read-only calls: concurrently, at most max_parallel at once
                async def one(k: int) -> None:
                    async with sem:
                        self.started.add(k)
                        self.done[k] = await self._run_one(calls[k], output_limit, timeout, turn, step)

                await asyncio.gather(*(one(k) for k in range(i, j)))
                i = j
            else:
                self.started.add(i)
                self.done[i] = await self._run_one(calls[i], output_limit, timeout, turn, step)
                i += 1
        results = [self.done[k] for k in range(len(calls))]
        self._loop_guard(results)
        return results

    def _read_only(self, name: str) -> bool:
        t = self.registry.get(name)
        return t is None or t.read_only  # an unknown tool only yields an error: harmless to overlap

    def _loop_guard(self, results: list[CallResult]) -> None:
        if not results or not all(r.is_error for r in results):
            self._guard_key, self._guard_runs = None, 0
            return
        key = tuple((r.call.name, r.call.arguments, r.content) for r in results)
        if key == self._guard_key:
            self._guard_runs += 1
        else:
            self._guard_key, self._guard_runs = key, 1
        if self._guard_runs >= LOOP_GUARD_RUNS:
            first = results[0]
            first.content = LOOP_GUARD_LINE.format(n=self._guard_runs) + "\n" + first.content

    async def _run_one(
        self, call: ToolCall, limit: int, timeout: float | None, turn: int, step: int
    ) -> CallResult:
        content, is_error = await self._execute(call, timeout, turn, step)
        return CallResult(call, cap_output(content, limit), is_error)

    async def _execute(self, call: ToolCall, timeout: float | None, turn: int, step: int) -> tuple[str, bool]:
        t = self.registry.get(call.name)
        if t is None:
            known = ", ".join(self.registry.names) or "none"
            return f'error: unknown tool "{call.name}" (available tools: {known})', True
        raw = call.arguments.strip()
        try:
            args = json.loads(raw) if raw else {}
        except json.JSONDecodeError as e:
            return (
                f"error: invalid JSON arguments for {t.name}: {e.msg} at position {e.pos}. "
                f"Arguments must be a JSON object matching this schema: {t.schema_text()}"
            ), True
        problems = t.check(args)
        if problems:
            return (
                f"error: invalid arguments for {t.name}: {'; '.join(problems)}. "
                f"Expected schema: {t.schema_text()}"
            ), True
        ctx = ToolContext(self.agent, call, args, turn, step)
        hooks = self.hooks
        try:
            if hooks is not None and hooks.tool_pre_execute_hooks:
                refusal = await self._pre_execute(ctx, hooks)
                if refusal is not None:
                    return refusal, True
            if hooks is not None and hooks.tool_execute_hooks:
                outcome = await run_waterfall(
                    hooks.tool_execute_hooks, ctx, lambda: self._invoke(t, ctx, timeout), "tool_execute"
                )
                if not isinstance(outcome, ToolOutcome):
                    outcome = ToolOutcome(to_text(outcome))
            else:
                outcome = await self._invoke(t, ctx, timeout)
            if hooks is not None and hooks.tool_post_execute_hooks:
                outcome = await self._post_execute(call, outcome, hooks)
        except Exception as e:  # a tool-hook error becomes this tool's error result
            return f"error: tool hook failed for {t.name}: {type(e).__name__}: {e}", True
        return outcome.content, outcome.is_error

    async def _invoke(self, t: Tool, ctx: ToolContext, timeout: float | None) -> ToolOutcome:
        limit = t.timeout if t.timeout is not None else timeout
        try:
            kwargs = t.bind(ctx.arguments, ctx)
            if t.is_async:
                coro = t.fn(**kwargs)
            else:
                coro = asyncio.to_thread(t.fn, **kwargs)
            value = await (asyncio.wait_for(coro, limit) if limit is not None else coro)
            if inspect.isawaitable(value):  # a sync wrapper that returned a coroutine
                value = await value
        except TimeoutError as e:
            if limit is None or str(e):  # the tool's own timeout, with its own message
                return ToolOutcome(f"error: {type(e).__name__}: {e}", True)
            return ToolOutcome(f"error: {t.name} timed out after {limit:g}s", True)
        except Exception as e:
            return ToolOutcome(f"error: {type(e).__name__}: {e}", True)
        if isinstance(value, ToolOutcome):
            return value
        return ToolOutcome(to_text(value))

    async def _pre_execute(self, ctx: ToolContext, hooks: Hooks) -> str | None:
        for fn in hooks.tool_pre_execute_hooks:
            decision = fn(ctx)
            if inspect.isawaitable(decision):
                decision = await decision
            if decision is None or isinstance(decision, Allow):
                continue
            if isinstance(decision, Deny):
                return f"blocked: {ctx.call.name} was denied: {decision.reason}"
            if isinstance(decision, Ask):
                approved = False
                if hooks.approver is not None:
                    answer = hooks.approver(ctx, decision.question)
                    approved = bool(await answer if inspect.isawaitable(answer) else answer)
                if not approved:
                    return (
                        f"blocked: {ctx.call.name} needs approval ({decision.question}) and was not approved"
                    )
                continue
            raise TypeError(f"tool_pre_execute must return allow()/deny()/ask() or None, got {decision!r}")
        return None

    async def _post_execute(self, call: ToolCall, outcome: ToolOutcome, hooks: Hooks) -> ToolOutcome:
        for fn in hooks.tool_post_execute_hooks:
            decision = fn(PostExecuteContext(self.agent, call, outcome))
            if inspect.isawaitable(decision):
                decision = await decision
            if decision is None or isinstance(decision, Accept):
                continue
            if isinstance(decision, Replace):
                outcome = ToolOutcome(decision.content, decision.is_error)
            elif isinstance(decision, Block):
                return ToolOutcome(
                    f"blocked: the result of {call.name} was withheld: {decision.reason}", True
                )
            else:
                raise TypeError(
                    f"tool_post_execute must return accept()/replace()/block() or None, got {decision!r}"
                )
        return outcome
