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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from foldlog.agent.approvals import _Paused, approval_required, pause
from foldlog.agent.hook_points import HookPoints, _TurnEnd
from foldlog.agent.inbox import Inbox
from foldlog.agent.options import Options
from foldlog.agent.output import OutputRun
from foldlog.agent.recorder import Reply, StepRecorder
from foldlog.agent.request import HookedProvider, Params, Requests, read_stream
from foldlog.agent.resume import Resuming
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
from foldlog.providers.base import declared
from foldlog.tools.registry import Tool, ToolRegistry
from foldlog.tools.runner import ToolRunner

if TYPE_CHECKING:
    from foldlog.log.grammar.types import ToolCall, Usage
    from foldlog.log.session import Session
    from foldlog.log.unfinished import UnfinishedTurn
    from foldlog.providers.base import Provider
    from foldlog.tools.host import ToolOutcome
    from foldlog.tools.runner import CallResult
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


@dataclass(slots=True)
class _TurnState:
    """Where a turn is: what its steps read and change."""

    turn: int
    #: the follow-up that started the turn, claimed by its first step
    first: dict[str, Any] | None
    step: int = 0
    steps_used: int = 0
    #: the next step is the grace step (tools off, the final answer asked for)
    grace: bool = False
    #: the loop guard saw a call make no progress: no tools on the next request
    answer_now: bool = False
    stream_retries: int = 0
    answer: str = ""


class Agent(HookPoints, Resuming):
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
        self._runner.approved = set()  # a call that waits for approval pauses the turn
        self._resuming: UnfinishedTurn | None = None  # the turn `resume` continues
        #: prices replies, keeps the session's spending, checks the budgets (foldlog.cost)
        abilities = declared(provider)
        self.meter = AgentMeter(
            session,
            price_provider=abilities.price_provider,
            prices=abilities.prices,
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
        return self.session.stream.subscribe(fn)

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
        if not self.inbox.has_work() and self._resuming is None:
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
            while self._resuming is not None or self.inbox.has_work():
                answer = await self._turn_loop()
            if self._output is not None:
                answer = self._output.result()
        finally:
            if self._output is not None:
                self._output.uninstall(self.registry)
                self._output = None
            self._task = None
            self._cancel_requested = False
            self.inbox.unbind()
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
        """One turn: its steps until one ends it (`_TurnEnd`), then its end logged; a
        cancellation or an error closes the open step and the turn validly."""
        rec = self._rec
        plan, self._resuming = self._resuming, None  # `resume`: the same turn, started again
        turn = self._turn = plan.turn if plan is not None else self._turn + 1
        rec.start_turn(turn, resumed=plan.reason if plan is not None else None)
        first = self.inbox.next_followup() if plan is None else None
        state = _TurnState(turn, first, plan.step, plan.steps) if plan else _TurnState(turn, first)
        try:
            await self._resume_turn(state, plan)
            while True:
                await self._step(state)
        except _TurnEnd as end:
            return self._end_turn(state, end)
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

    async def _step(self, t: _TurnState) -> None:
        """One step: its input claimed and logged, one request, the reply recorded; then the
        calls run (`_after_calls`) or the answer weighed (`_after_answer`). Returns when the turn
        goes on; raises `_TurnEnd` when it ends."""
        rec = self._rec
        claimed = ([t.first] if t.first is not None else []) + self.inbox.claim()
        t.first = None
        claimed = await self._pre_step(t.turn, t.step + 1, claimed)
        t.step += 1
        rec.start_step(t.turn, t.step)
        for m in claimed:
            rec.user(m)
        if t.grace:
            rec.user({"role": "user", "content": GRACE_PROMPT, "source": "grace"})
        if self._output is not None:
            self._output.write_pending(rec)
        t.steps_used += 1
        st, t.stream_retries = await self._request(
            t.turn, t.step, not (t.grace or t.answer_now), t.stream_retries
        )
        content = "".join(st.text)
        calls = st.calls if st.finish != "length" else []
        cost = self.meter.price(st.usage, self._requests.model) if st.usage is not None else None
        rec.reply(t.turn, t.step, st, content, calls, cost.to_log() if cost is not None else None)
        if st.usage is not None:
            self._report_usage(st.usage, cost.total if cost is not None else None)
        if st.finish == "length":
            rec.close_step()
            raise _TurnEnd("max-tokens")
        if calls:
            await self._after_calls(t, calls)
        else:
            await self._after_answer(t, content)

    async def _after_calls(self, t: _TurnState, calls: list[ToolCall]) -> None:
        """A reply with tool calls: run them (none after the grace step), then compact when due."""
        rec = self._rec
        if t.grace:
            rec.calls(t.turn, t.step, calls)
            rec.fill_results(NOT_RUN_GRACE)
            rec.close_step()
            raise _TurnEnd("max-steps", {"steps": t.steps_used})
        if self._output is not None:
            self._output.begin_batch(calls)
        results = await self._run_tools(calls)
        if any(r.awaiting is not None for r in results):  # the turn pauses for a person
            raise pause(rec, t.turn, t.step, results)
        t.answer_now = t.answer_now or self._runner.no_progress
        rec.close_step()
        if self._output is not None and self._output.settled(self._rec, t.turn, t.step):
            raise _TurnEnd("completed")
        await self._maybe_compact()
        t.grace = self._next_step(t.steps_used, t.grace)

    async def _after_answer(self, t: _TurnState, content: str) -> None:
        """A reply without calls: the answer, unless a typed answer is invalid (retried), a
        ``turn_stopping`` hook or steering goes on with another step."""
        self._rec.close_step()
        t.answer = content
        if self._output is not None and not self._output.answered_with(self._rec, t.turn, t.step, content):
            # not valid: the retry message goes into the next step, a step like any other
            t.grace = self._next_step(t.steps_used, t.grace)
            return
        await self._turn_stopping(t.turn, t.answer)
        if not self.inbox.has_steering():
            await self._maybe_compact()
        if self.inbox.has_steering():
            t.grace = self._next_step(t.steps_used, t.grace)
            return
        raise _TurnEnd("completed")

    def _end_turn(self, t: _TurnState, end: _TurnEnd) -> str:
        """Log the turn's end; its answer, or the error a budget or the step limit ends it with."""
        self._rec.end_turn(t.turn, end.kind, end.detail, end.error)
        if isinstance(end, _Paused):
            raise approval_required(t.turn, end.calls) from None
        self._runner.end_turn()  # an idle agent keeps nothing of the turn's tool results
        if end.kind == "budget":
            d = end.detail
            raise BudgetExceeded(
                f"turn {t.turn}: {end.error}",
                limit=d.get("limit"),
                used=d.get("used"),
                budget=d.get("budget"),
            ) from None
        if end.kind == "max-steps":
            raise MaxStepsExceeded(
                f"turn {t.turn} used its {self.options.max_steps}-step budget"
                f"{' and the grace step' if self.options.grace_step else ''} without a final answer"
            ) from None
        return t.answer

    def _next_step(self, steps_used: int, grace: bool) -> bool:
        """Whether the next step of the turn is the grace step; ends the turn ``max-steps`` when
        there may be none. Every step counts against ``max_steps``, whatever continues the turn
        (tool calls, steering, a ``turn_stopping`` hook, an output retry): after the grace step
        no step follows."""
        limit = self.options.max_steps
        if grace or (limit is not None and steps_used >= limit and not self.options.grace_step):
            raise _TurnEnd("max-steps", {"steps": steps_used})
        return limit is not None and steps_used >= limit

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

    async def _run_tools(self, calls: list[ToolCall]) -> list[CallResult]:
        results = await self._rec.run_batch(self._runner, calls, self._flush)  # with its write-ahead
        await self._flush()
        return results

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
