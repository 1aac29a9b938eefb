"""Sub-agents: ``run_subagent`` and the ``task`` tool that runs one on behalf of a parent agent."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

from foldlog.errors import ConfigError, FoldlogError
from foldlog.events import ToolDispatch, ToolResult, Usage
from foldlog.tools.host import ToolContext
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
) -> str:
    """Run a child agent on ``session`` and return its last non-empty assistant answer.

    ``hooks``: capability hooks (tool and stream policies, the approver) the child runs under;
    the ``task`` tool passes its parent's, so delegating never escapes a policy."""
    from foldlog.agent.loop import Agent

    if session is None:
        raise ConfigError("run_subagent needs a session (got None)")
    child = Agent(provider, registry, session, options, sink)
    if hooks is not None:
        child.hooks.share_capabilities(hooks)
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
) -> str:
    """Delegate a self-contained piece of work to a sub-agent with a fresh context and the same tools.
    Only its final answer comes back; use it for searches or multi-step investigations."""
    host = ctx.agent
    if host is None:
        raise RuntimeError("the task tool needs a running parent agent")
    return await host.delegate(prompt, max_steps=max_steps, call_id=ctx.call.id)


async def delegate(parent: Agent, prompt: str, *, max_steps: int | None, call_id: str) -> str:
    """The ``task`` tool's work for ``parent`` (`Agent.delegate`): a child with the parent's
    system prompt in a fresh session, its tools but ``task``, its provider, model and policies,
    and a step budget of ``child_steps``; tool events reach the parent's sink nested under
    ``call_id``."""
    from foldlog.log.session import Session

    system = next(
        (m.get("content") for m in parent.session.derive_messages() if m.get("role") == "system"), None
    )
    child_session = Session(system=system if isinstance(system, str) else None)
    options = dataclasses.replace(
        parent.options, max_steps=child_steps(max_steps, parent.options.max_steps), model=parent.model
    )
    # nor the parent's final-answer tool (a typed run's): the child answers in text
    from foldlog.agent.output import FINAL_TOOL

    registry = parent.registry.without(TASK_TOOL, FINAL_TOOL)
    sink = NestedSink(parent.emit, call_id)
    return await run_subagent(
        parent.provider, registry, child_session, prompt, options, sink, hooks=parent.hooks
    )


def task_tool() -> Tool:
    """The ``task`` tool. Register it with the parent's tools (it is never passed to the child)."""
    return make_tool(_task, name=TASK_TOOL)


__all__ = ["NestedSink", "child_steps", "delegate", "run_subagent", "task_tool"]
