"""Sub-agents: ``run_subagent`` and the ``task`` tool that runs one on behalf of a parent agent."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from foldlog.errors import AgentBusyError, ConfigError, FoldlogError
from foldlog.events import ToolDispatch, ToolResult, Usage
from foldlog.tools.host import ToolContext, ToolOutcome
from foldlog.tools.registry import Tool, make_tool

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent
    from foldlog.agent.options import Options
    from foldlog.hooks import Hooks
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider
    from foldlog.tools.registry import ToolRegistry

TASK_TOOL = "task"
MIN_CHILD_STEPS = 5


async def run_subagent(
    provider: Provider,
    registry: ToolRegistry,
    session: Session,
    prompt: str,
    options: Options | None,
    sink: Callable[[Any], Any] | None,
    *,
    hooks: Hooks | None = None,
    on_child: Callable[[Agent], None] | None = None,
) -> str:
    """Run a child agent on ``session`` and return its last non-empty assistant answer.

    ``hooks``: capability hooks (tool and stream policies, the approver) the child runs under;
    the ``task`` tool passes its parent's, so delegating never escapes a policy. ``on_child``:
    told the child agent before it runs (the ``task`` tool reads its spending from it)."""
    from foldlog.agent.loop import Agent

    if session is None:
        raise ConfigError("run_subagent needs a session (got None)")
    child = Agent(provider, registry, session, options, sink)
    if hooks is not None:
        child.hooks.share_capabilities(hooks)
        # a delegated run cannot pause its parent's call for a person (docs/durable-runs.md): a
        # call that needs approval is refused unless the approver says yes
        child._runner.approved = None
    if on_child is not None:
        on_child(child)
    await child.run(prompt)
    for m in reversed(session.derive_messages()):
        if m.get("role") == "assistant":
            content = m.get("content")
            if isinstance(content, str) and content.strip():
                return content
    raise FoldlogError("the sub-agent finished without producing a final answer")


class NestedSink:
    """Forwards only tool dispatch/result (ids as ``parent/child``) and usage (source ``subagent``)."""

    __slots__ = ("emit", "parent_id")

    def __init__(self, emit: Callable[[Any], Any], parent_id: str) -> None:
        self.emit = emit
        self.parent_id = parent_id

    def __call__(self, event: Any) -> None:
        if isinstance(event, (ToolDispatch, ToolResult)):
            self.emit(dataclasses.replace(event, id=f"{self.parent_id}/{event.id}"))
        elif isinstance(event, Usage):
            self.emit(dataclasses.replace(event, source="subagent"))


def child_steps(explicit: int | None, parent: int | None) -> int | None:
    """Explicit budget, else half the parent's (at least 5); unbounded when the parent is."""
    if explicit is not None:
        if explicit < 1:
            raise ConfigError(f"max_steps must be >= 1, got {explicit}")
        return explicit
    if parent is None:
        return None
    return max(MIN_CHILD_STEPS, parent // 2)


async def _task(
    ctx: ToolContext,
    prompt: Annotated[str, "Complete, self-contained instructions for the sub-agent"],
    max_steps: Annotated[
        int | None, "Step budget for the sub-agent (default: half of yours, at least 5)"
    ] = None,
) -> str | ToolOutcome:
    """Delegate a self-contained piece of work to a sub-agent with a fresh context and the same tools.
    Only its final answer comes back; use it for searches or multi-step investigations."""
    host = ctx.agent
    if host is None:
        raise AgentBusyError("the task tool needs a running parent agent")
    return await host.delegate(prompt, max_steps=max_steps, call_id=ctx.call.id)


async def delegate(parent: Agent, prompt: str, *, max_steps: int | None, call_id: str) -> ToolOutcome:
    """The ``task`` tool's work for ``parent`` (`Agent.delegate`): a child with the parent's
    system prompt in a fresh session, its tools but ``task``, its provider, model and policies,
    a step budget of ``child_steps`` and what is left of the parent's cost and token budgets;
    tool events reach the parent's sink nested under ``call_id``.

    The child's session names its parent in its header (``{"kind": "subagent", "id", "callId"}``)
    and, when the parent's log is a file, is a file beside it (``<child id>.jsonl``). The result
    (an error result when the child failed) carries the child's spending in its ``meta``
    (``subagent: {session, spend}``), which `foldlog.cost` rolls up into the parent."""
    from foldlog.log.session import Session

    system = next(
        (m.get("content") for m in parent.session.derive_messages() if m.get("role") == "system"), None
    )
    system = system if isinstance(system, str) else None
    link = {"kind": "subagent", "id": parent.session.id, "callId": call_id}
    if parent.session.path is not None:
        from foldlog.log.session import new_session_id

        child_path = parent.session.path.parent / f"{new_session_id()}.jsonl"
        child_session = Session.open(child_path, system=system, parent=link)
    else:
        child_session = Session(system=system, parent=link)
    cost_left, tokens_left = parent.meter.remaining()
    options = dataclasses.replace(
        parent.options,
        max_steps=child_steps(max_steps, parent.options.max_steps),
        model=parent.model,
        cost_limit=cost_left,
        token_budget=tokens_left,
    )
    # nor the parent's final-answer tool (a typed run's): the child answers in text
    from foldlog.agent.output import FINAL_TOOL

    registry = parent.registry.without(TASK_TOOL, FINAL_TOOL)
    sink = NestedSink(parent.emit, call_id)
    children: list[Agent] = []

    def started(child: Agent) -> None:
        children.append(child)
        for watch in list(parent.child_watchers):
            watch(child, call_id)

    def spent() -> dict[str, Any]:
        spend = children[0].meter.spend.to_dict() if children else None
        return {"subagent": {"session": child_session.id, "spend": spend}} if spend else {}

    try:
        answer = await run_subagent(
            parent.provider,
            registry,
            child_session,
            prompt,
            options,
            sink,
            hooks=parent.hooks,
            on_child=started,
        )
        return ToolOutcome(answer, meta=spent())
    except asyncio.CancelledError:
        raise
    except Exception as e:  # as the tool runner reports a tool's error, with the spending kept
        return ToolOutcome(f"error: {type(e).__name__}: {e}", True, meta=spent())
    finally:
        if child_session.path is not None:
            child_session.close()


def task_tool() -> Tool:
    """The ``task`` tool. Register it with the parent's tools (it is never passed to the child)."""
    return make_tool(_task, name=TASK_TOOL)


__all__ = ["NestedSink", "child_steps", "delegate", "run_subagent", "task_tool"]
