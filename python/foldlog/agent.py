"""The agent loop: turns and steps over a session log (spec/agent-loop.md).

Every arrow that reaches the model passes through the log first: claimed input is logged as
``user/message`` events, each request carries exactly ``session.wire_messages()`` at that
moment, and replies and tool results are logged before the loop acts on them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from foldlog.errors import (
    FoldlogError,
    HookError,
    HookRefused,
    MaxStepsExceeded,
    RunCancelled,
    StreamInterrupted,
)
from foldlog.events import (
    Notice,
    Reasoning,
    Retrying,
    SinkDispatcher,
    Steer,
    Text,
    ToolDispatch,
    ToolResult,
    TurnDone,
    TurnStarted,
)
from foldlog.events import Usage as UsageEvent
from foldlog.hooks import (
    RAISE,
    RETRY,
    Enter,
    HookedProvider,
    Hooks,
    PreStepContext,
    Reject,
    RequestContext,
    RequestErrorContext,
    StreamContext,
    TurnStoppingContext,
    pre_step_decision,
    request_decision,
    request_error_decision,
    run_waterfall,
    stream_decision,
)
from foldlog.inbox import Inbox
from foldlog.options import Options
from foldlog.providers.base import Request, ToolCall, Usage, chunk_data
from foldlog.providers.content import ContentScan
from foldlog.tools.content import render_text
from foldlog.tools.registry import Tool, ToolRegistry
from foldlog.tools.runner import CallResult, ToolRunner

if TYPE_CHECKING:
    from foldlog.providers.base import Chunk, Provider
    from foldlog.session import Session

_log = logging.getLogger("foldlog.agent")

CONTINUE_PROMPT = "[The previous reply was cut off by a network error. Continue exactly where it stopped.]"
GRACE_PROMPT = (
    "[The step limit for this turn has been reached. Tools are no longer available: give your final "
    "answer now, summarising what was done and what remains.]"
)
NOT_RUN_GRACE = "error: not executed: the step limit was reached and tools are disabled for the final answer"
CANCELLED_BEFORE = "error: cancelled before execution"
CANCELLED_DURING = "error: cancelled during execution"
FAILED_BEFORE = "error: not executed: the turn failed before this call ran"


@dataclass(slots=True)
class _Stream:
    """What one provider stream delivered so far (kept for cancellation and interruptions)."""

    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    finish: str | None = None
    # seqs of the `assistant/chunk` events recorded for this stream (Options.record_chunks)
    chunks: list[int] | None = None


@dataclass(slots=True)
class _Step:
    """The open step's state, so an abort can close it validly."""

    turn: int
    step: int
    stream: _Stream | None = None
    calls: list[tuple[ToolCall, int]] = field(default_factory=list)  # (call, seq of its tool/call)
    results_logged: int = 0


_UNSET = object()


class _TurnEnd(Exception):
    def __init__(self, kind: str, detail: Mapping[str, Any] | None = None, error: str | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.detail = dict(detail or {})
        self.error = error


class Agent:
    """Runs turns of a model with tools over a :class:`foldlog.Session`.

    ``tools`` is a :class:`ToolRegistry` or an iterable of tools / typed functions. ``sink``
    receives :mod:`foldlog.events` dataclasses in order.
    """

    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry | Iterable[Tool | Callable[..., Any]] | None = None,
        session: Session | None = None,
        options: Options | None = None,
        sink: Callable[[Any], Any] | None = None,
    ) -> None:
        if session is None:
            from foldlog.session import Session

            session = Session()
        self.provider = provider
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools or ())
        self.session = session
        if session.model is None:
            # the session counts its events with this model's tokenizer as they are flushed
            session.model = getattr(options, "model", None) or getattr(provider, "model", None)
        self.options = options if options is not None else Options()
        self.hooks = Hooks()
        self.inbox = Inbox()
        self._emit = SinkDispatcher(sink)
        self._runner = ToolRunner(self.registry, self, self.hooks)
        self._turn = _last_turn(session)
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel_requested = False
        self._compactor: Any = None
        self._compactor_loaded = False
        self._header: str | None = _last_header(session)
        self._header_tools: Any = None
        self._header_model: Any = _UNSET
        self._header_params: dict[str, Any] = {}
        self._open: _Step | None = None
        self._content = ContentScan()  # the non-text blocks of the requests, kept incrementally
        self.last_usage: Usage | None = None
        self.last_prompt_tokens: int | None = None

    # --- public API ------------------------------------------------------------------------

    @property
    def sink(self) -> Callable[[Any], Any] | None:
        return self._emit.sink

    @property
    def running(self) -> bool:
        return self._task is not None

    def followup(self, message: str | Mapping[str, Any]) -> None:
        """Queue a new turn (wakes the loop)."""
        self.inbox.put("followup", message)

    def steer(self, message: str | Mapping[str, Any]) -> None:
        """Join the next step of the running turn (wakes the loop; continues a finishing turn)."""
        self.inbox.put("steer", message)

    def inject(self, message: str | Mapping[str, Any]) -> None:
        """Join the next step, whenever that is (does not wake the loop)."""
        self.inbox.put("inject", message)

    def subscribe(self, fn: Callable[[Mapping[str, Any]], Any]) -> Callable[[], None]:
        """Session-event subscriber: ``fn(event)`` after each committed event."""
        return self.session.subscribe(fn)

    def cancel(self) -> bool:
        """Stop the running turn (safe from any task or thread). ``run`` raises :class:`RunCancelled`."""
        task, loop = self._task, self._loop
        if task is None or loop is None or task.done() or self._cancel_requested:
            return False
        self._cancel_requested = True

        def do() -> None:
            # From another thread this runs later: the run may have ended meanwhile, and the task
            # then belongs to the caller again, so only cancel while it still runs this agent.
            if self._task is task and not task.done():
                task.cancel("foldlog: Agent.cancel()")

        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            do()
        else:
            loop.call_soon_threadsafe(do)
        return True

    def run_sync(self, prompt: str | Mapping[str, Any] | None = None) -> str:
        """``run`` for plain scripts (starts and closes its own event loop)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # no loop: the normal case. (Running the agent in here would chain every error
            # it raises to this "no running event loop" error.)
        else:
            raise RuntimeError(
                "Agent.run_sync() cannot be called from a running event loop; use await agent.run()"
            )
        return asyncio.run(self.run(prompt))

    async def run(self, prompt: str | Mapping[str, Any] | None = None) -> str:
        """Queue ``prompt`` as a follow-up and run turns until no work is owed; the last answer."""
        if self._task is not None:
            raise RuntimeError("this agent is already running; use followup()/steer() to add input")
        if prompt is not None:
            self.followup(prompt)
        if not self.inbox.has_work():
            raise ValueError("nothing to run: pass a prompt or queue input with followup()/steer()")
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self.inbox.bind(self._loop)
        self._cancel_requested = False
        self.hooks.notify_status("running")
        answer = ""
        try:
            while self.inbox.has_work():
                answer = await self._turn_loop()
        finally:
            self._task = None
            self._cancel_requested = False
            if self.options.release_when_idle and not self.inbox.has_work():
                self._release_session()
            self.hooks.notify_status("idle")
        return answer

    def _release_session(self) -> None:
        """Release the idle session (`Options.release_when_idle`); a failure to do so (a store
        that cannot be written) is logged, never raised over the run's own outcome."""
        try:
            self.session.release()
        except Exception:
            _log.warning("agent: could not release session %s", self.session.id, exc_info=True)

    async def compact(self, focus: str | None = None) -> None:
        """Manual compaction: forced, bypasses the stuck latch."""
        compactor = self._get_compactor()
        if compactor is None:
            raise NotImplementedError("compaction is not available: foldlog.compaction is not installed")
        await compactor.compact("manual", focus, force=True)
        self.session.flush()

    # --- the turn --------------------------------------------------------------------------

    async def _turn_loop(self) -> str:
        self._turn += 1
        turn = self._turn
        self._append("turn/start", {"turn": turn})
        self._emit(TurnStarted(turn))
        first = self.inbox.next_followup()
        step = 0
        steps_used = 0
        grace = False
        stream_retries = 0
        answer = ""
        try:
            while True:
                claimed = ([first] if first is not None else []) + self.inbox.claim()
                first = None
                claimed = await self._pre_step(turn, step + 1, claimed)
                step += 1
                self._open = _Step(turn, step)
                self._append("step/start", {"turn": turn, "step": step})
                for m in claimed:
                    self._append("user/message", m, surface_op="append")
                    if m.get("source") == "steer":
                        self._emit(Steer(_text_of(m)))
                if grace:
                    self._append(
                        "user/message",
                        {"role": "user", "content": GRACE_PROMPT, "source": "grace"},
                        surface_op="append",
                    )
                steps_used += 1
                st, stream_retries = await self._request(turn, step, not grace, stream_retries)
                content = "".join(st.text)
                calls = st.calls if st.finish != "length" else []
                self._log_assistant(turn, step, st, content, calls)
                if st.finish == "length":
                    self._close_step()
                    raise _TurnEnd("max-tokens")
                if calls:
                    if grace:
                        self._log_calls(turn, step, calls)
                        self._fill_results(NOT_RUN_GRACE)
                        self._close_step()
                        raise _TurnEnd("max-steps", {"steps": steps_used})
                    await self._run_tools(turn, step, calls)
                    self._close_step()
                    await self._maybe_compact()
                    limit = self.options.max_steps
                    if limit is not None and steps_used >= limit:
                        if not self.options.grace_step:
                            raise _TurnEnd("max-steps", {"steps": steps_used})
                        grace = True
                    continue
                self._close_step()
                answer = content
                await self._turn_stopping(turn, answer)
                if self.inbox.has_steering():
                    continue
                await self._maybe_compact()
                if self.inbox.has_steering():
                    continue
                raise _TurnEnd("completed")
        except _TurnEnd as end:
            self._end_turn(turn, end.kind, end.detail, end.error)
            if end.kind == "max-steps":
                raise MaxStepsExceeded(
                    f"turn {turn} used its {self.options.max_steps}-step budget"
                    f"{' and the grace step' if self.options.grace_step else ''} without a final answer"
                ) from None
            return answer
        except asyncio.CancelledError:
            self._abort(turn)
            task = asyncio.current_task()
            if self._cancel_requested and task is not None:
                task.uncancel()
                raise RunCancelled(f"turn {turn} was cancelled") from None
            raise
        except BaseException as e:
            # Provider errors after retries, hook errors, anything else: close the turn validly.
            self._fill_results(FAILED_BEFORE)
            self._close_step()
            self._end_turn(turn, "error", {"message": f"{type(e).__name__}: {e}"}, f"{type(e).__name__}: {e}")
            raise

    async def _pre_step(self, turn: int, step: int, claimed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        hooks = self.hooks.pre_step_hooks
        if not hooks:
            return claimed
        ctx = PreStepContext(self, turn, step, list(claimed))

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
            self._close_step()
            raise _TurnEnd(
                "blocked", {"message": str(r), "hook": r.hook, "listener": r.listener}, str(r)
            ) from None

    async def _turn_stopping(self, turn: int, answer: str) -> None:
        for fn in self.hooks.turn_stopping_hooks:
            await self._hook("turn_stopping", _call(fn, TurnStoppingContext(self, turn, answer)))

    async def _hook(self, domain: str, awaitable: Any) -> Any:
        try:
            return await awaitable
        except (HookError, _TurnEnd, asyncio.CancelledError):
            raise
        except Exception as e:
            raise HookError(f"{domain} hook raised {type(e).__name__}: {e}") from e

    # --- one request -----------------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        o = self.options
        return {
            "model": o.model or getattr(self.provider, "model", None),
            "max_tokens": o.max_tokens,
            "temperature": o.temperature,
        }

    async def _request_params(self, turn: int, step: int) -> dict[str, Any]:
        params = self._params()
        if not self.hooks.request_hooks:
            return params
        ctx = RequestContext(self, turn, step, self.session.derive_messages(), params)

        async def default() -> dict[str, Any]:
            return ctx.params

        out: dict[str, Any] = await self._waterfall(
            "request", self.hooks.request_hooks, ctx, default, request_decision
        )
        return out

    async def _request(self, turn: int, step: int, offer_tools: bool, retries: int) -> tuple[_Stream, int]:
        attempt = 0
        while True:
            params = await self._request_params(turn, step)
            tools = self.registry.schemas() if offer_tools and len(self.registry) else ()
            model = params.pop("model", None)
            max_tokens = params.pop("max_tokens", None)
            temperature = params.pop("temperature", None)
            header_params = {
                k: v for k, v in (("max_tokens", max_tokens), ("temperature", temperature)) if v is not None
            }
            self._log_header(model, tools, {**header_params, **params} if header_params else params)
            await self._flush()
            style = _wire_style(self.provider)
            wire = self.session.wire_request(style) if style is not None else None
            messages = wire.messages if wire is not None else self.session.wire_messages()
            request = Request(
                messages=messages,
                tools=tools,
                model=model,
                max_tokens=max_tokens,
                temperature=temperature,
                params=params,
                wire=wire,
                # indexed only for a provider that checks what it can send (a cost per request)
                content=self._content.index(messages) if _checks_content(self.provider) else None,
            )
            if self.options.check_invariants:
                self._check_invariant(request)
            try:
                return await self._stream(request, turn, step), retries
            except StreamInterrupted as e:
                retries += 1
                self._log_partial(turn, step, e.partial_text)
                if retries > self.options.max_stream_retries:
                    raise
                self._emit(Retrying(f"stream interrupted: {e}", retries))
                self._append(
                    "user/message",
                    {"role": "user", "content": CONTINUE_PROMPT, "source": "continue"},
                    surface_op="append",
                )
            except (asyncio.CancelledError, HookError, _TurnEnd):
                raise
            except Exception as e:
                attempt += 1
                self._log_partial(turn, step)
                if not self.hooks.request_error_hooks:
                    raise
                ectx = RequestErrorContext(self, turn, step, e, attempt)

                async def stand() -> str:
                    return RAISE

                try:
                    decision = await self._hook(
                        "request_error",
                        run_waterfall(
                            self.hooks.request_error_hooks,
                            ectx,
                            stand,
                            "request_error",
                            request_error_decision,
                        ),
                    )
                except HookRefused:
                    decision = RAISE  # a refusal lets the error stand
                if decision != RETRY:
                    raise
                self._emit(Retrying(f"{type(e).__name__}: {e}", attempt))

    def _check_invariant(self, request: Request) -> None:
        wire = self.session.wire_messages()
        if list(request.messages) != list(wire):
            raise AssertionError(
                "foldlog invariant broken: the request messages differ from session.wire_messages()"
            )

    async def _stream(self, request: Request, turn: int, step: int) -> _Stream:
        st = _Stream(chunks=[] if self.options.record_chunks else None)
        if self._open is not None:
            self._open.stream = st
        if self.hooks.llm_stream_hooks:

            async def base() -> AsyncIterator[Chunk]:
                return self.provider.stream(request)

            stream = await self._waterfall(
                "llm_stream",
                self.hooks.llm_stream_hooks,
                StreamContext(self, request),
                base,
                stream_decision,
            )
        else:
            stream = self.provider.stream(request)
        emit = self._emit
        recorded = st.chunks
        try:
            async for chunk in stream:
                kind = chunk.kind
                if recorded is not None:
                    recorded.append(
                        self._append(
                            "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk_data(chunk)}
                        )
                    )
                if kind == "text":
                    st.text.append(chunk.text)
                    emit(Text(chunk.text, turn, step))
                elif kind == "reasoning":
                    st.reasoning.append(chunk.text)
                    emit(Reasoning(chunk.text, turn, step))
                elif kind == "tool_call_start":
                    emit(ToolDispatch(chunk.id, chunk.name, "", partial=True))
                elif kind == "tool_call":
                    st.calls.append(chunk.call)
                elif kind == "usage":
                    st.usage = chunk.usage
                elif kind == "done":
                    st.finish = chunk.finish_reason
                elif kind == "error":
                    raise chunk.error
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if st.finish is None or st.finish == "cut":
            raise StreamInterrupted(
                "the stream ended without a finish reason (cut connection)", partial_text="".join(st.text)
            )
        return st

    # --- logging ---------------------------------------------------------------------------

    def _append(
        self,
        type_: str,
        data: Mapping[str, Any],
        *,
        surface_op: str | None = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        return self.session.append_event(type_, data, surface_op=surface_op, source_event_seqs=sources)

    def _log_header(self, model: Any, tools: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> None:
        """Log ``request/header`` on the first request and whenever model, tools or params change."""
        if tools is self._header_tools and model == self._header_model and params == self._header_params:
            return
        data = {"model": model, "tools": [dict(t) for t in tools], "params": dict(params)}
        key = json.dumps(data, sort_keys=True, default=str)
        self._header_tools, self._header_model, self._header_params = tools, model, dict(params)
        if key != self._header:
            self._header = key
            self._append("request/header", json.loads(key))

    def _log_assistant(self, turn: int, step: int, st: _Stream, content: str, calls: list[ToolCall]) -> None:
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if st.reasoning:
            message["reasoning_content"] = "".join(st.reasoning)
        if calls:
            message["tool_calls"] = [c.to_openai() for c in calls]
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
        if st.usage is not None:
            data["usage"] = st.usage.to_dict()
        self._append("assistant/message", data, surface_op="append", sources=st.chunks)
        if self._open is not None:
            self._open.stream = None
        if st.usage is not None:
            self._report_usage(st.usage)

    def _log_partial(self, turn: int, step: int, fallback: str = "") -> None:
        """Keep the text of a stream that stopped early as an interrupted assistant message."""
        st = self._open.stream if self._open is not None else None
        text = "".join(st.text) if st is not None else ""
        text = text or fallback
        reasoning = "".join(st.reasoning) if st is not None else ""
        if self._open is not None:
            self._open.stream = None
        if not text and not reasoning:
            return
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning:
            message["reasoning_content"] = reasoning
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message, "interrupted": True}
        if st is not None and st.usage is not None:
            data["usage"] = st.usage.to_dict()
        self._append("assistant/message", data, surface_op="append", sources=st.chunks if st else None)

    def _report_usage(self, u: Usage) -> None:
        self.last_usage = u
        self.last_prompt_tokens = u.prompt_tokens or None
        cost_fn = getattr(self.provider, "cost", None)
        cost = cost_fn(u) if callable(cost_fn) else None
        self._emit(
            UsageEvent(
                u.prompt_tokens,
                u.completion_tokens,
                u.cache_hit_tokens,
                u.cache_miss_tokens,
                u.cache_hit_rate,
                cost,
                "executor",
            )
        )

    def _log_calls(self, turn: int, step: int, calls: Sequence[ToolCall]) -> None:
        assert self._open is not None
        for c in calls:
            seq = self._append(
                "tool/call",
                {"turn": turn, "step": step, "callId": c.id, "name": c.name, "arguments": c.arguments},
            )
            self._open.calls.append((c, seq))
            self._emit(ToolDispatch(c.id, c.name, c.arguments))

    def _log_result(
        self, content: str | list[dict[str, Any]], is_error: bool, meta: Mapping[str, Any] | None = None
    ) -> None:
        st = self._open
        assert st is not None
        call, seq = st.calls[st.results_logged]
        st.results_logged += 1
        msg = {
            "role": "tool",
            "toolCallId": call.id,
            "toolName": call.name,
            "content": content,
            "isError": is_error,
        }
        data: dict[str, Any] = {"turn": st.turn, "step": st.step, "message": msg}
        if meta:
            # e.g. utf8Replaced / omittedBytes: what was done to the output to make it loggable
            data["meta"] = dict(meta)
        self._append("tool/result", data, surface_op="append", sources=[seq])
        self._emit(ToolResult(call.id, call.name, render_text(content), is_error))

    def _fill_results(
        self, content: str, done: Mapping[int, CallResult] | None = None, started: set[int] | None = None
    ) -> None:
        """Give every logged call without a result one (real when it finished, else ``content``)."""
        st = self._open
        if st is None:
            return
        while st.results_logged < len(st.calls):
            k = st.results_logged
            if done is not None and k in done:
                self._log_result(done[k].content, done[k].is_error, done[k].meta)
            elif started is not None and k in started:
                self._log_result(CANCELLED_DURING, True)
            else:
                self._log_result(content, True)

    def _close_step(self) -> None:
        st = self._open
        if st is None:
            return
        if st.stream is not None:
            self._log_partial(st.turn, st.step)
        self._open = None
        self._append("step/end", {"turn": st.turn, "step": st.step})

    def _end_turn(self, turn: int, kind: str, detail: Mapping[str, Any], error: str | None) -> None:
        self._append("turn/end", {"turn": turn, "reason": {"kind": kind, **detail}})
        self.session.flush()
        self._emit(TurnDone(turn, kind, error))

    def _abort(self, turn: int) -> None:
        st = self._open
        if st is not None and st.calls:
            self._fill_results(CANCELLED_BEFORE, self._runner.done, self._runner.started)
        self._close_step()
        self._end_turn(turn, "aborted", {}, "cancelled")

    # --- tools -----------------------------------------------------------------------------

    async def _run_tools(self, turn: int, step: int, calls: list[ToolCall]) -> None:
        self._log_calls(turn, step, calls)
        o = self.options
        results = await self._runner.run_batch(
            calls,
            max_parallel=o.max_parallel_tools,
            output_limit=o.tool_output_limit,
            timeout=o.tool_timeout,
            turn=turn,
            step=step,
            argument_limit=o.tool_argument_limit,
        )
        for r in results:
            self._log_result(r.content, r.is_error, r.meta)
        await self._flush()

    async def _flush(self) -> None:
        # An fsync takes milliseconds and would stall every other session on this event loop; the
        # session's lock keeps a concurrent append or a later flush waiting for this one.
        if self.session.flush_syncs:
            await asyncio.to_thread(self.session.flush)
        else:
            self.session.flush()

    # --- compaction ------------------------------------------------------------------------

    def _get_compactor(self) -> Any:
        if not self._compactor_loaded:
            self._compactor_loaded = True
            try:
                from foldlog.compaction import Compactor  # type: ignore[import-not-found,unused-ignore]
            except ModuleNotFoundError as e:
                if e.name != "foldlog.compaction":
                    raise
                return None
            opts = self.options
            if opts.context_window is None and getattr(self.provider, "context_window", None):
                opts = dataclasses.replace(opts, context_window=self.provider.context_window)
            # summary calls are provider streams too: they pass through the llm_stream hooks
            if opts.summary_provider is not None:
                opts = dataclasses.replace(
                    opts, summary_provider=HookedProvider(self, opts.summary_provider, "compaction")
                )
            provider = HookedProvider(self, self.provider, "compaction")
            self._compactor = Compactor(self.session, provider, opts, self._emit)
        return self._compactor

    async def _maybe_compact(self) -> None:
        compactor = self._get_compactor()
        if compactor is None:
            return
        try:
            await compactor.maybe_compact(self.last_prompt_tokens, self.registry.schemas())
        except (asyncio.CancelledError, FoldlogError) as e:
            if isinstance(e, asyncio.CancelledError):
                raise
            self._emit(Notice(f"compaction failed: {e}", "warn"))
        except Exception as e:
            self._emit(Notice(f"compaction failed: {type(e).__name__}: {e}", "warn"))


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    out = fn(*args)
    if inspect.isawaitable(out):
        out = await out
    return out


def _text_of(m: Mapping[str, Any]) -> str:
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(b.get("text", "") for b in c if isinstance(b, Mapping))
    return ""


def _checks_content(provider: Any) -> bool:
    return getattr(provider, "content_types", None) is not None


def _wire_style(provider: Any) -> str | None:
    """The provider's wire style, when it sends the core's cached message JSON (`foldlog.wire`)."""
    fn = getattr(provider, "wire_style", None)
    style = fn() if callable(fn) else None
    return style if isinstance(style, str) else None


def _last_turn(session: Any) -> int:
    known = getattr(session, "last_turn", None)  # kept by the core: no scan of the log
    if isinstance(known, int):
        return known
    events = session.events
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if ev["type"] in ("turn/start", "turn/end"):
            return int(ev["data"].get("turn", 0))
    return 0


def _last_header(session: Any) -> str | None:
    events = session.events
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if ev["type"] == "request/header":
            return json.dumps(ev["data"], sort_keys=True, default=str)
    return None


__all__ = ["Agent"]
