"""Running one batch of tool calls: lookup, argument checks, policy hooks, concurrency, output cap.

Every failure the model can act on becomes an error result (``error: …``) rather than an
exception: unknown tools, arguments over the size limit, invalid JSON, invalid arguments (with
the schema), tool exceptions, timeouts and hook errors. Results come back in call order whatever
order they finished in, as valid UTF-8 text within the output limit (:mod:`foldlog.tools.output`).

A timeout cannot stop a thread, and a coroutine may ignore cancellation: a tool that hangs gets
its error result after the timeout (plus ``CANCEL_GRACE`` for a coroutine to clean up) and is
abandoned. Sync tools run on their own daemon threads, not the loop's default executor, so an
abandoned one neither uses up the executor's few workers nor keeps ``asyncio.run`` (and so
``Agent.run_sync``) from returning.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import inspect
import json
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from foldlog.errors import HookError, HookRefused
from foldlog.hooks import (
    Accept,
    Allow,
    Ask,
    Block,
    Deny,
    PostExecuteContext,
    Replace,
    run_waterfall,
)
from foldlog.tools.content import MalformedContent, cap_blocks, check_blocks, looks_like_blocks
from foldlog.tools.host import ToolContext, ToolHost, ToolLimits, ToolOutcome
from foldlog.tools.output import HeadTail, cap_output, cap_text, clean_text, json_text, utf8_len

if TYPE_CHECKING:
    from foldlog.hooks import Hooks
    from foldlog.log.grammar.types import ToolCall
    from foldlog.tools.registry import Tool, ToolRegistry

LOOP_GUARD_RUNS = 3
LOOP_GUARD_LINE = (
    "[loop guard] these exact calls have failed {n} times in a row with the same errors; "
    "stop repeating them and change approach."
)
REPEAT_LIMIT = 3
"""Runs of one call (same tool, same arguments) in a row with the same result, nothing changed in
between, that make it no progress (the third)."""
NO_PROGRESS = (
    "[loop guard] {name} has now returned this same result {n} times in a row for these same "
    "arguments, with nothing changed in between; calling it again will not change it: change "
    "approach, answer now with what you have."
)


_log = logging.getLogger("foldlog.tools")

CANCEL_GRACE = 2.0
"""Seconds a timed-out or cancelled async tool gets to finish its cleanup before it is abandoned
(longer than the bash tool's SIGTERM → SIGKILL grace, so its process group is always killed)."""


def to_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    try:
        return json_text(value)  # valid JSON: NaN/Infinity become null
    except (TypeError, ValueError, RecursionError):  # circular, or keys JSON cannot hold
        return str(value)


def to_outcome(value: Any, limit: int) -> ToolOutcome:
    """A tool's return value as a result; bytes are capped before they are decoded (never whole);
    a list of content blocks stays a list (``foldlog.tools.content``)."""
    if isinstance(value, ToolOutcome):
        return value
    if looks_like_blocks(value):
        return ToolOutcome(list(value))
    if isinstance(value, bytes | bytearray | memoryview):
        kept = HeadTail(limit)
        kept.feed(value)
        text, omitted, replaced = kept.render()
        meta = {"omittedBytes": omitted} if omitted else {}
        if replaced:
            meta["utf8Replaced"] = replaced
        return ToolOutcome(text, meta=meta)
    return ToolOutcome(to_text(value))


def bounded(outcome: ToolOutcome, limit: int) -> tuple[str | list[dict[str, Any]], dict[str, Any]]:
    """The outcome's content as it may be logged (no lone surrogates, text within ``limit``) and
    its meta. Content blocks are checked first: :class:`MalformedContent` names the bad one."""
    meta = dict(outcome.meta)
    content: str | list[dict[str, Any]]
    if isinstance(outcome.content, str):
        # capped first: only what is kept gets scanned for lone surrogates
        content, omitted = cap_text(outcome.content, limit)
        content, replaced = clean_text(content)
    else:
        content, omitted, replaced = cap_blocks(check_blocks(outcome.content), limit)
    if omitted:
        meta["omittedBytes"] = meta.get("omittedBytes", 0) + omitted
    if replaced:
        meta["utf8Replaced"] = meta.get("utf8Replaced", 0) + replaced
    return content, meta


def _retrieve(task: asyncio.Future[Any]) -> None:
    # an abandoned tool's late failure has no one to report to; reading it keeps asyncio quiet
    if not task.cancelled():
        task.exception()


async def _settle(task: asyncio.Future[Any], name: str) -> None:
    """Cancel a tool's task and give it ``CANCEL_GRACE`` seconds to finish; abandon it after that."""
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=CANCEL_GRACE)
    if not done:
        _log.warning("tool %s ignored cancellation for %.1f s; abandoned", name, CANCEL_GRACE)
    task.add_done_callback(_retrieve)


def _in_thread(fn: Callable[..., Any], kwargs: Mapping[str, Any], name: str) -> asyncio.Future[Any]:
    """Run a sync tool on a daemon thread of its own; the future resolves on the calling loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    ctx = contextvars.copy_context()

    def resolve(value: Any, error: BaseException | None) -> None:
        if future.done():  # timed out or cancelled meanwhile
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(value)

    def work() -> None:
        value: Any = None
        error: BaseException | None = None
        try:
            value = ctx.run(fn, **kwargs)
        except BaseException as e:  # handed to the awaiting task, which reports it
            error = e
        try:
            loop.call_soon_threadsafe(resolve, value, error)
        except RuntimeError:
            pass  # the loop is closed: the run ended while this tool was still blocked

    threading.Thread(target=work, name=f"foldlog-tool-{name}", daemon=True).start()
    return future


AWAITING_APPROVAL = "error: not run yet: {name} is waiting for a person's approval"
"""The result a call waiting for approval stands with while its turn is paused (replaced by the
real one when the turn is resumed: docs/durable-runs.md)."""


class _AwaitingApproval(Exception):
    """Control flow: the call waits for a person (``question``: the hook's, or empty)."""

    def __init__(self, question: str) -> None:
        super().__init__(question)
        self.question = question


@dataclass(slots=True)
class CallResult:
    call: ToolCall
    content: str | list[dict[str, Any]]
    is_error: bool
    meta: dict[str, Any] = field(default_factory=dict)
    #: the call was not run: it waits for a person's approval (the question asked, or "")
    awaiting: str | None = None


#: ``on_result(result)``: told each result as soon as it and those before it are final
OnResult = Callable[["CallResult"], Awaitable[None]]


class ToolRunner:
    """Runs batches for one agent (``host``: the agent as its tools see it; ``None`` outside an
    agent); keeps the loop-guard memory between batches. ``limits``: the bounds every call runs
    under (default: the `ToolLimits` defaults)."""

    def __init__(
        self,
        registry: ToolRegistry,
        host: ToolHost | None,
        hooks: Hooks | None,
        limits: ToolLimits | None = None,
    ) -> None:
        self.registry = registry
        self.host = host
        self.hooks = hooks
        self.limits = limits if limits is not None else ToolLimits()
        self._guard_key: tuple[Any, ...] | None = None
        self._guard_runs = 0
        # no-progress memory of this turn: (name, arguments) -> (its last result, runs in a row
        # with that result); a call that may change state (not read_only) clears the others
        self._seen_turn = 0
        self._seen: dict[tuple[str, str], tuple[str, int]] = {}
        self.no_progress = False  # the last batch repeated a call that made no progress
        # state of the batch in progress, read by the agent when the batch is cancelled
        self.started: set[int] = set()
        self.done: dict[int, CallResult] = {}
        #: the approval flow (docs/durable-runs.md): ``None`` outside an agent that can pause (a
        #: call that needs approval is then refused unless the approver says yes); else the ids
        #: of the calls a person approved, which run without asking again
        self.approved: set[str] | None = None
        self._keys: dict[int, str] = {}
        self._reported = 0

    async def run_batch(
        self,
        calls: Sequence[ToolCall],
        *,
        turn: int = 0,
        step: int = 0,
        on_result: OnResult | None = None,
    ) -> list[CallResult]:
        """Run ``calls``; their results in call order. ``on_result`` is told each result as soon
        as it and every result before it are final (the agent logs and stores it at once: the
        write-ahead of docs/durable-runs.md); the last one after the batch's own guard."""
        limits = self.limits
        output_limit, timeout = limits.output_limit, limits.timeout
        self.started = set()
        self.done = {}
        self._keys, self._reported = {}, 0
        self.no_progress = False
        if turn >= 1 and turn != self._seen_turn:
            self._seen_turn, self._seen = turn, {}
        sem = asyncio.Semaphore(limits.max_parallel)
        i = 0
        while i < len(calls):
            j = i
            while j < len(calls) and self.read_only(calls[j].name):
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
            await self._report(len(calls) - 1, turn, on_result)
        results = [self.done[k] for k in range(len(calls))]
        if results:
            last = results[-1]
            key = self._keys[len(results) - 1] = _result_key(last)  # before either guard's line
            warned = self._loop_guard(results)
            # one guard line per result: the failing-batch guard's goes before the last result
            self._note_repeat(last, key, turn, add_line=not warned)
            self._reported = len(results)
            if on_result is not None:
                await on_result(last)
        return results

    async def _report(self, upto: int, turn: int, on_result: OnResult | None) -> None:
        """Finish and report, in call order, the results before index ``upto`` that are done."""
        while self._reported < upto and self._reported in self.done:
            r = self.done[self._reported]
            key = self._keys[self._reported] = _result_key(r)  # before the guard adds its line
            self._note_repeat(r, key, turn, add_line=True)
            self._reported += 1
            if on_result is not None:
                await on_result(r)

    def _note_repeat(self, r: CallResult, result: str, turn: int, *, add_line: bool) -> None:
        """Count, in call order, a call's runs in a row with the same result; the ``REPEAT_LIMIT``-th
        and later get the `NO_PROGRESS` line before their result (``no_progress`` is set).

        Why: a small model that did not take in a result asks for it again and again until the
        step limit. Only the same result again is no progress: a call whose result changed (a
        test run after an edit, a poll) resets its count, and so does any call in between that
        may change state (a tool not declared ``read_only``), so a test run after an edit always
        counts from one. The call still runs: the guard judges its result, never refuses it.
        (``add_line`` false: the failing-batch guard already put its line before this result.)"""
        if turn < 1 or r.awaiting is not None:  # not run by an agent's turn; or not run at all
            return
        key = (r.call.name, _canonical_arguments(r.call.arguments))
        if not self.read_only(r.call.name):
            self._seen = {k: v for k, v in self._seen.items() if k == key}
        last, runs = self._seen.get(key, ("", 0))
        runs = runs + 1 if runs and last == result else 1
        self._seen[key] = (result, runs)
        if runs >= REPEAT_LIMIT:
            self.no_progress = True
            if add_line:
                _prefix(r, NO_PROGRESS.format(name=r.call.name, n=runs))

    def end_turn(self) -> None:
        """The turn ended: its no-progress memory and its last batch are never read again (the
        next turn starts its own), so an idle agent does not keep its results."""
        self._seen_turn, self._seen = 0, {}
        self.started, self.done, self._keys = set(), {}, {}

    def read_only(self, name: str) -> bool:
        """Whether a call of ``name`` cannot change anything (runs concurrently; needs no write-ahead)."""
        t = self.registry.get(name)
        return t is None or t.read_only  # an unknown tool only yields an error: harmless to overlap

    def _loop_guard(self, results: list[CallResult]) -> bool:
        """The spec's warning: after ``LOOP_GUARD_RUNS`` identical all-failing batches in a row,
        a line before the last result (whether it added one). The last, not the first: the
        results before it are already logged and stored when the batch ends (`run_batch`).
        A batch with a call waiting for approval is not judged (its turn pauses)."""
        if any(r.awaiting is not None for r in results):
            return False
        if not results or not all(r.is_error for r in results):
            self._guard_key, self._guard_runs = None, 0
            return False
        key = tuple((r.call.name, r.call.arguments, self._keys[k]) for k, r in enumerate(results))
        if key == self._guard_key:
            self._guard_runs += 1
        else:
            self._guard_key, self._guard_runs = key, 1
        if self._guard_runs >= LOOP_GUARD_RUNS:
            _prefix(results[-1], LOOP_GUARD_LINE.format(n=self._guard_runs))
            return True
        return False

    async def _run_one(
        self, call: ToolCall, limit: int, timeout: float | None, turn: int, step: int
    ) -> CallResult:
        try:
            outcome = await self._execute(call, limit, timeout, turn, step)
        except _AwaitingApproval as wait:
            return CallResult(call, AWAITING_APPROVAL.format(name=call.name), True, awaiting=wait.question)
        try:
            content, meta = bounded(outcome, limit)
        except MalformedContent as e:  # never a crash: the model is told what was wrong
            return CallResult(call, f"error: {call.name} returned malformed content blocks: {e}", True)
        return CallResult(call, content, outcome.is_error, meta)

    async def _execute(
        self, call: ToolCall, limit: int, timeout: float | None, turn: int, step: int
    ) -> ToolOutcome:
        t = self.registry.get(call.name)
        if t is None:
            known = ", ".join(self.registry.names) or "none"
            return ToolOutcome(f'error: unknown tool "{call.name}" (available tools: {known})', True)
        max_args = self.limits.argument_limit
        if max_args is not None and len(call.arguments) > max_args // 4:  # cheap test first
            size = utf8_len(call.arguments)
            if size > max_args:
                return ToolOutcome(
                    f"error: the arguments for {t.name} are {size} bytes, over the limit of {max_args} "
                    "bytes; the call was not run. Pass large content in several smaller calls.",
                    True,
                )
        raw = call.arguments.strip()
        try:
            args = json.loads(raw) if raw else {}
        except json.JSONDecodeError as e:
            return ToolOutcome(
                f"error: invalid JSON arguments for {t.name}: {e.msg} at position {e.pos}. "
                f"Arguments must be a JSON object matching this schema: {t.schema_text()}",
                True,
            )
        problems = t.check(args)
        if problems:
            return ToolOutcome(
                f"error: invalid arguments for {t.name}: {'; '.join(problems)}. "
                f"Expected schema: {t.schema_text()}",
                True,
            )
        ctx = ToolContext(self.host, call, args, turn, step)
        hooks = self.hooks
        needs_approval = t.approval_needed(args)
        if hooks is None or not hooks.tool_pre_execute_hooks:
            refused = await self._approval(ctx, "") if needs_approval else None
            if refused is not None:
                return ToolOutcome(refused, True)
            if hooks is None:
                return await self._invoke(t, ctx, timeout, limit)
        try:
            if hooks.tool_pre_execute_hooks:
                refused = await self._pre_execute(ctx, hooks, needs_approval)
                if refused is not None:
                    return ToolOutcome(refused, True)
            if hooks.tool_execute_hooks:
                outcome = await run_waterfall(
                    hooks.tool_execute_hooks,
                    ctx,
                    lambda: self._invoke(t, ctx, timeout, limit),
                    "tool_execute",
                    lambda value, _listener: to_outcome(value, limit),
                )
            else:
                outcome = await self._invoke(t, ctx, timeout, limit)
            if hooks.tool_post_execute_hooks:
                outcome = await self._post_execute(call, outcome, hooks)
        except HookRefused as r:
            return ToolOutcome(f"blocked: {t.name} was not run: {r}", True)
        except _AwaitingApproval:
            raise
        except Exception as e:  # a tool-hook error becomes this tool's error result
            return ToolOutcome(f"error: tool hook failed for {t.name}: {type(e).__name__}: {e}", True)
        return outcome

    async def _invoke(
        self, t: Tool, ctx: ToolContext, timeout: float | None, output_limit: int
    ) -> ToolOutcome:
        limit = t.timeout if t.timeout is not None else timeout
        try:
            kwargs = t.bind(ctx.arguments, ctx)
            work = t.fn(**kwargs) if t.is_async else _in_thread(t.fn, kwargs, t.name)
            if limit is None:  # nothing to bound: no task to watch (a cancellation goes straight in)
                value = await work
            else:
                task = asyncio.ensure_future(work)
                try:
                    done, _ = await asyncio.wait({task}, timeout=limit)
                except asyncio.CancelledError:
                    await _settle(task, t.name)
                    raise
                if not done:
                    await _settle(task, t.name)
                    return ToolOutcome(f"error: {t.name} timed out after {limit:g}s", True)
                value = task.result()
            if inspect.isawaitable(value):  # a sync wrapper that returned a coroutine
                value = await value
        except Exception as e:  # the tool's own TimeoutError keeps its own message
            return ToolOutcome(f"error: {type(e).__name__}: {e}", True)
        return to_outcome(value, output_limit)

    async def _pre_execute(self, ctx: ToolContext, hooks: Hooks, needs_approval: bool) -> str | None:
        """The policy chain's decision: ``None`` to run the call, else the refusal text. A call
        the chain allows that needs approval (``needs_approval``) is asked about like an `ask`."""

        async def allowed() -> Allow:
            return Allow()

        decision = await run_waterfall(
            hooks.tool_pre_execute_hooks, ctx, allowed, "tool_pre_execute", _pre_execute_decision
        )
        if isinstance(decision, Deny):
            return f"blocked: {ctx.call.name} was denied: {decision.reason}"
        if isinstance(decision, Ask):
            return await self._approval(ctx, decision.question)
        return await self._approval(ctx, "") if needs_approval else None

    async def _approval(self, ctx: ToolContext, question: str) -> str | None:
        """A call that needs a person's yes (``question``: a hook's `ask`, or "" for a tool's
        ``needs_approval``): ``None`` to run it, else the refusal text. Approved already (a resumed
        turn's answer) → runs; an approver → it decides now; an agent that can pause → the call
        waits (`_AwaitingApproval`); else it is refused."""
        if self.approved is not None and ctx.call.id in self.approved:
            return None
        hooks = self.hooks
        if hooks is not None and hooks.approver is not None:
            answer = hooks.approver(ctx, question)
            if bool(await answer if inspect.isawaitable(answer) else answer):
                return None
        elif self.approved is not None:
            raise _AwaitingApproval(question)
        what = f" ({question})" if question else ""
        return f"blocked: {ctx.call.name} needs approval{what} and was not approved"

    async def _post_execute(self, call: ToolCall, outcome: ToolOutcome, hooks: Hooks) -> ToolOutcome:
        ctx = PostExecuteContext(self.host, call, outcome)

        async def accepted() -> Accept:
            return Accept()

        try:
            decision = await run_waterfall(
                hooks.tool_post_execute_hooks, ctx, accepted, "tool_post_execute", _post_execute_decision
            )
        except HookRefused as r:
            return ToolOutcome(f"blocked: the result of {call.name} was withheld: {r}", True)
        if isinstance(decision, Replace):
            return ToolOutcome(decision.content, decision.is_error)
        if isinstance(decision, Block):
            return ToolOutcome(f"blocked: the result of {call.name} was withheld: {decision.reason}", True)
        return ctx.result  # accepted (as a listener may have set it before passing on)


def _pre_execute_decision(value: Any, listener: str) -> Allow | Deny | Ask:
    if isinstance(value, Allow | Deny | Ask):
        return value
    raise HookError(f"tool_pre_execute hook {listener} must return allow()/deny()/ask(), got {value!r}")


def _post_execute_decision(value: Any, listener: str) -> Accept | Replace | Block:
    if isinstance(value, Accept | Replace | Block):
        return value
    raise HookError(
        f"tool_post_execute hook {listener} must return accept()/replace()/block(), got {value!r}"
    )


def _prefix(result: CallResult, line: str) -> None:
    """Put a guard's ``line`` before the result's content (text, or a first text block)."""
    if isinstance(result.content, str):
        result.content = line + "\n" + result.content
    else:
        result.content = [{"type": "text", "text": line}, *result.content]


def _result_key(result: CallResult) -> str:
    """A result as compared between runs of a call: a digest of its error flag and content (the
    turn's memory stays small however large the results are)."""
    content = json.dumps([result.is_error, result.content], sort_keys=True, default=str)
    return hashlib.blake2b(content.encode(), digest_size=16).hexdigest()


def _canonical_arguments(arguments: str) -> str:
    """Arguments compared as JSON values (key order and spacing do not matter), else as text."""
    try:
        return json.dumps(json.loads(arguments or "{}"), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return arguments.strip()


__all__ = [
    "AWAITING_APPROVAL",
    "CallResult",
    "OnResult",
    "ToolRunner",
    "bounded",
    "cap_output",
    "to_outcome",
    "to_text",
]
