"""The agent loop: turns and steps over a session log (spec/agent-loop.md).

Every arrow that reaches the model passes through the log first: claimed input is logged as
``user/message`` events, each request carries exactly ``session.wire_messages()`` at that
moment, and replies and tool results are logged before the loop acts on them. The events are
written by :mod:`foldlog.agent.recorder`; a request is assembled by :mod:`foldlog.agent.request`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, overload

from foldlog.agent.hook_points import HookPoints, _TurnEnd
from foldlog.agent.inbox import Inbox
from foldlog.agent.options import Options
from foldlog.agent.output import OutputRun
from foldlog.agent.recorder import Reply, StepRecorder
from foldlog.agent.request import HookedProvider, Params, Requests, read_stream
from foldlog.compaction.compactor import Compactor
from foldlog.cost.meter import AgentMeter
from foldlog.errors import (
    AgentBusyError,
    BudgetExceeded,
    FoldlogError,
    HookError,
    HookRefused,
    MaxStepsExceeded,
    NothingToRunError,
    RunCancelled,
    StreamInterrupted,
)
from foldlog.events import Notice, Retrying, SinkDispatcher
from foldlog.events import Usage as UsageEvent
from foldlog.hooks import (
    RAISE,
    RETRY,
    Hooks,
    RequestContext,
    RequestErrorContext,
    StreamContext,
    request_decision,
    request_error_decision,
    run_waterfall,
    stream_decision,
)
from foldlog.tools.registry import Tool, ToolRegistry
from foldlog.tools.runner import ToolRunner

if TYPE_CHECKING:
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider, ToolCall, Usage
    from foldlog.tools.host import ToolOutcome
    from foldlog.tools.toolset import Toolset

_log = logging.getLogger("foldlog.agent")
T = TypeVar("T")

CONTINUE_PROMPT = "[The previous reply was cut off by a network error. Continue exactly where it stopped.]"
GRACE_PROMPT = (
    "[The step limit for this turn has been reached. Tools are no longer available: give your final "
    "answer now, summarising what was done and what remains.]"
)
NOT_RUN_GRACE = "error: not executed: the step limit was reached and tools are disabled for the final answer"
FAILED_BEFORE = "error: not executed: the turn failed before this call ran"


class Agent(HookPoints):
    """Runs turns of a model with tools over a :class:`foldlog.Session`.

    ``tools`` is a :class:`ToolRegistry` or an iterable of tools / typed functions. ``sink``
    receives :mod:`foldlog.events` dataclasses in order.

    The model and the context window are resolved once, here: ``options.model`` else the
    provider's, ``options.context_window`` else the provider's. The model is what every request
    names and whose tokenizer the session counts with (`model` can be changed between runs).
    """

    def __init__(
        self,
        provider: Provider,
        tools: ToolRegistry | Iterable[Tool | Callable[..., Any] | Toolset] | None = None,
        session: Session | None = None,
        options: Options | None = None,
        sink: Callable[[Any], Any] | None = None,
    ) -> None:
        if session is None:
            from foldlog.log.session import Session

            session = Session()
        self.provider = provider
        self.registry = tools if isinstance(tools, ToolRegistry) else ToolRegistry(tools or ())
        self.session = session
        self.options = options if options is not None else Options()
        self.window: int | None = self.options.context_window or provider.context_window
        self._model: str | None = self.options.model or provider.model or None
        if session.model is None:
            # the session counts its events with this model's tokenizer as they are flushed
            session.model = self._model
        self.hooks = Hooks()
        self.inbox = Inbox()
        self._emit = SinkDispatcher(sink)
        self._rec = StepRecorder(session, self._emit)
        self._requests = Requests(session, provider)
        self._runner = ToolRunner(self.registry, self, self.hooks, self.options.tool_limits)
        #: prices replies, keeps the session's spending, checks the budgets (foldlog.cost)
        self.meter = AgentMeter(
            session,
            provider,
            cost_limit=self.options.cost_limit,
            token_budget=self.options.token_budget,
            model=self._model,
        )
        #: called with ``(child agent, call id)`` when a sub-agent starts (`foldlog.telemetry`)
        self.child_watchers: list[Callable[[Agent, str], None]] = []
        #: keeps the session inside the window (after every tool batch, before an answer)
        self.compactor = self._make_compactor()
        self._turn = session.last_turn
        self._task: asyncio.Task[Any] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel_requested = False
        self.last_usage: Usage | None = None
        self.last_prompt_tokens: int | None = None
        self._output: OutputRun | None = None  # the typed answer of the run (`output_type`)

    # --- public API ------------------------------------------------------------------------

    @property
    def sink(self) -> Callable[[Any], Any] | None:
        return self._emit.sink

    @property
    def running(self) -> bool:
        return self._task is not None

    @property
    def model(self) -> str | None:
        """The model every request names (``None``: the provider's own default)."""
        return self._model

    @model.setter
    def model(self, name: str | None) -> None:
        """Use ``name`` from the next request on; the session counts with its tokenizer too."""
        self._model = name or None
        self.session.model = self._model

    def emit(self, event: Any) -> None:
        """Send a UI event (a :mod:`foldlog.events` dataclass) to the sink, in order."""
        self._emit(event)

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

    @overload
    def run_sync(self, prompt: str | Mapping[str, Any] | None = None) -> str: ...
    @overload
    def run_sync(self, prompt: str | Mapping[str, Any] | None = None, *, output_type: type[T]) -> T: ...
    @overload
    def run_sync(
        self, prompt: str | Mapping[str, Any] | None = None, *, output_type: Mapping[str, Any]
    ) -> Any: ...

    def run_sync(self, prompt: str | Mapping[str, Any] | None = None, *, output_type: Any = None) -> Any:
        """``run`` for plain scripts (starts and closes its own event loop, and with it the
        connections of the agent's MCP servers)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # no loop: the normal case. (Running the agent in here would chain every error
            # it raises to this "no running event loop" error.)
        else:
            raise AgentBusyError(
                "Agent.run_sync() cannot be called from a running event loop; use await agent.run()"
            )

        async def run_and_close() -> Any:
            try:
                return await self.run(prompt, output_type=output_type)
            finally:
                await self.registry.aclose()

        return asyncio.run(run_and_close())

    @overload
    async def run(self, prompt: str | Mapping[str, Any] | None = None) -> str: ...
    @overload
    async def run(self, prompt: str | Mapping[str, Any] | None = None, *, output_type: type[T]) -> T: ...
    @overload
    async def run(
        self, prompt: str | Mapping[str, Any] | None = None, *, output_type: Mapping[str, Any]
    ) -> Any: ...

    async def run(self, prompt: str | Mapping[str, Any] | None = None, *, output_type: Any = None) -> Any:
        """Queue ``prompt`` as a follow-up and run turns until no work is owed; the last answer.

        ``output_type`` (a pydantic model, dataclass, TypedDict or JSON-schema dict): the answer
        is validated and returned as that type (docs/output.md)."""
        if self._task is not None:
            raise AgentBusyError("this agent is already running; use followup()/steer() to add input")
        if prompt is not None:
            self.followup(prompt)
        if not self.inbox.has_work():
            raise NothingToRunError("nothing to run: pass a prompt or queue input with followup()/steer()")
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self.inbox.bind(self._loop)
        self._cancel_requested = False
        self.hooks.notify_status("running")
        answer: Any = ""
        try:
            # typed output (agent/output.py): the final-answer tool or the native schema
            if output_type is not None:
                self._output = OutputRun.start(output_type, self.provider, self.options.output_retries)
                self._output.install(self.registry)
            await self.registry.prepare()  # MCP servers: listed when the run starts
            while self.inbox.has_work():
                answer = await self._turn_loop()
            if self._output is not None:
                answer = self._output.result()
        finally:
            if self._output is not None:
                self._output.uninstall(self.registry)
                self._output = None
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
        await self.compactor.compact("manual", focus, force=True)
        self.session.flush()

    async def delegate(self, prompt: str, *, max_steps: int | None, call_id: str) -> ToolOutcome:
        """Run ``prompt`` in a sub-agent (the ``task`` tool's work; see `foldlog.agent.subagent`)."""
        from foldlog.agent.subagent import delegate

        return await delegate(self, prompt, max_steps=max_steps, call_id=call_id)

    # --- the turn --------------------------------------------------------------------------

    async def _turn_loop(self) -> str:
        self._turn += 1
        turn = self._turn
        rec = self._rec
        rec.start_turn(turn)
        first = self.inbox.next_followup()
        step = 0
        steps_used = 0
        grace = False
        answer_now = False  # the loop guard saw a call make no progress: no tools on the next request
        stream_retries = 0
        answer = ""
        try:
            while True:
                claimed = ([first] if first is not None else []) + self.inbox.claim()
                first = None
                claimed = await self._pre_step(turn, step + 1, claimed)
                step += 1
                rec.start_step(turn, step)
                for m in claimed:
                    rec.user(m)
                if grace:
                    rec.user({"role": "user", "content": GRACE_PROMPT, "source": "grace"})
                if self._output is not None:
                    self._output.write_pending(rec)
                steps_used += 1
                st, stream_retries = await self._request(
                    turn, step, not (grace or answer_now), stream_retries
                )
                content = "".join(st.text)
                calls = st.calls if st.finish != "length" else []
                cost = self.meter.price(st.usage) if st.usage is not None else None
                rec.reply(turn, step, st, content, calls, cost.to_log() if cost is not None else None)
                if st.usage is not None:
                    self._report_usage(st.usage, cost.total if cost is not None else None)
                if st.finish == "length":
                    rec.close_step()
                    raise _TurnEnd("max-tokens")
                if calls:
                    if grace:
                        rec.calls(turn, step, calls)
                        rec.fill_results(NOT_RUN_GRACE)
                        rec.close_step()
                        raise _TurnEnd("max-steps", {"steps": steps_used})
                    if self._output is not None:
                        self._output.begin_batch(calls)
                    await self._run_tools(turn, step, calls)
                    answer_now = answer_now or self._runner.no_progress
                    rec.close_step()
                    if self._output is not None and self._output_settled(turn, step):
                        raise _TurnEnd("completed")
                    await self._maybe_compact()
                    grace = self._next_step(steps_used, grace)
                    continue
                rec.close_step()
                answer = content
                if self._output is not None and not self._output_answer(turn, step, content):
                    # not valid: the retry message goes into the next step, a step like any other
                    grace = self._next_step(steps_used, grace)
                    continue
                await self._turn_stopping(turn, answer)
                if not self.inbox.has_steering():
                    await self._maybe_compact()
                if self.inbox.has_steering():
                    grace = self._next_step(steps_used, grace)
                    continue
                raise _TurnEnd("completed")
        except _TurnEnd as end:
            rec.end_turn(turn, end.kind, end.detail, end.error)
            if end.kind == "budget":
                d = end.detail
                raise BudgetExceeded(
                    f"turn {turn}: {end.error}",
                    limit=d.get("limit"),
                    used=d.get("used"),
                    budget=d.get("budget"),
                ) from None
            if end.kind == "max-steps":
                raise MaxStepsExceeded(
                    f"turn {turn} used its {self.options.max_steps}-step budget"
                    f"{' and the grace step' if self.options.grace_step else ''} without a final answer"
                ) from None
            return answer
        except asyncio.CancelledError:
            rec.abort(turn, self._runner.done, self._runner.started)
            task = asyncio.current_task()
            if self._cancel_requested and task is not None:
                task.uncancel()
                raise RunCancelled(f"turn {turn} was cancelled") from None
            raise
        except BaseException as e:
            # Provider errors after retries, hook errors, a reply the log refused, anything else:
            # close the turn validly.
            rec.fail(turn, e, FAILED_BEFORE)
            raise

    def _next_step(self, steps_used: int, grace: bool) -> bool:
        """Whether the next step of the turn is the grace step; ends the turn ``max-steps`` when
        there may be none. Every step counts against ``max_steps``, whatever continues the turn
        (tool calls, steering, a ``turn_stopping`` hook, an output retry): after the grace step
        no step follows."""
        limit = self.options.max_steps
        if grace or (limit is not None and steps_used >= limit and not self.options.grace_step):
            raise _TurnEnd("max-steps", {"steps": steps_used})
        return limit is not None and steps_used >= limit

    # --- typed output (the rules are in agent/output.py) -----------------------------------

    def _output_settled(self, turn: int, step: int) -> bool:
        """After a tool batch: whether the final-answer tool accepted an answer (raises when
        its retries ran out)."""
        out = self._output
        assert out is not None
        out.end_batch()
        if out.failure is not None:
            raise out.failure
        if not out.accepted:
            return False
        out.record(self._rec, turn, step, out.value)
        return True

    def _output_answer(self, turn: int, step: int, content: str) -> bool:
        out = self._output
        assert out is not None
        if out.answer_text(content):
            out.record(self._rec, turn, step, out.value)
            return True
        return False

    # --- one request -----------------------------------------------------------------------

    async def _request_params(self, turn: int, step: int) -> Params:
        o = self.options
        params = {"model": self._model, "max_tokens": o.max_tokens, "temperature": o.temperature}
        if self._output is not None:
            params.update(self._output.params())  # the native JSON schema (`response_format`)
        if self.hooks.request_hooks:
            ctx = RequestContext(self, turn, step, self.session.derive_messages(), params)

            async def default() -> dict[str, Any]:
                return ctx.params

            params = await self._waterfall(
                "request", self.hooks.request_hooks, ctx, default, request_decision
            )
        return Params.split(params)

    async def _request(self, turn: int, step: int, offer_tools: bool, retries: int) -> tuple[Reply, int]:
        attempt = 0
        while True:
            over = self.meter.over(self._model)  # the budgets (foldlog.cost.meter)
            if over is not None:
                self._rec.close_step()
                raise _TurnEnd("budget", {k: v for k, v in over.items() if k != "message"}, over["message"])
            params = await self._request_params(turn, step)
            await self.registry.prepare()  # an MCP server's tools changed: listed again
            tools = self.registry.schemas() if offer_tools and len(self.registry) else ()
            self._requests.log_header(self._rec, params, tools)
            await self._flush()
            request = self._requests.build(params, tools)
            if self.options.check_invariants:
                self._requests.check_invariant(request)
            try:
                return await self._stream(request, turn, step), retries
            except StreamInterrupted as e:
                retries += 1
                self._rec.partial(turn, step, e.partial_text)
                if retries > self.options.max_stream_retries:
                    raise
                self._emit(Retrying(f"stream interrupted: {e}", retries))
                self._rec.user({"role": "user", "content": CONTINUE_PROMPT, "source": "continue"})
            except (asyncio.CancelledError, HookError, _TurnEnd):
                raise
            except Exception as e:
                attempt += 1
                self._rec.partial(turn, step)
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

    async def _stream(self, request: Any, turn: int, step: int) -> Reply:
        reply = Reply(chunks=[] if self.options.record_chunks else None)
        if self._rec.open is not None:
            self._rec.open.reply = reply
        if self.hooks.llm_stream_hooks:

            async def base() -> Any:
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
        return await read_stream(stream, reply, self._rec, self._emit, turn, step)

    def _report_usage(self, u: Usage, cost: float | None) -> None:
        self.last_usage = u
        self.last_prompt_tokens = u.prompt_tokens or None
        self._emit(UsageEvent.of(u, "executor", cost))

    # --- tools -----------------------------------------------------------------------------

    async def _run_tools(self, turn: int, step: int, calls: list[ToolCall]) -> None:
        self._rec.calls(turn, step, calls)
        for r in await self._runner.run_batch(calls, turn=turn, step=step):
            self._rec.result(r.content, r.is_error, r.meta)
        await self._flush()

    async def _flush(self) -> None:
        # An fsync takes milliseconds and would stall every other session on this event loop; the
        # session's lock keeps a concurrent append or a later flush waiting for this one.
        if self.session.flush_syncs:
            await asyncio.to_thread(self.session.flush)
        else:
            self.session.flush()

    # --- compaction ------------------------------------------------------------------------

    def _make_compactor(self) -> Compactor:
        settings = self.options.compaction(self.window)
        # summary calls are provider streams too: they pass through the llm_stream hooks
        if settings.summary_provider is not None:
            summarizer = HookedProvider(self, settings.summary_provider, "compaction")
            settings = dataclasses.replace(settings, summary_provider=summarizer)
        return Compactor(
            self.session, HookedProvider(self, self.provider, "compaction"), settings, self._emit
        )

    async def _maybe_compact(self) -> None:
        try:
            await self.compactor.maybe_compact(self.last_prompt_tokens, self.registry.schemas())
        except asyncio.CancelledError:
            raise
        except FoldlogError as e:
            self._emit(Notice(f"compaction failed: {e}", "warn"))
        except Exception as e:
            self._emit(Notice(f"compaction failed: {type(e).__name__}: {e}", "warn"))


__all__ = ["Agent"]
