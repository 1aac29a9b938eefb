"""Tools and the registry: ``@tool`` turns a typed function into a model-callable tool."""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin, overload

from foldlog.errors import ConfigError
from foldlog.tools.host import ToolContext
from foldlog.tools.schema import SchemaError, convert, function_schema, parse_docstring, validate
from foldlog.tools.toolset import Toolset

_NAME_OK = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _is_context(tp: Any) -> bool:
    """A ``ToolContext`` parameter (also ``ToolContext | None``) is injected, not asked of the model."""
    if tp is ToolContext:
        return True
    args = [a for a in get_args(tp) if a is not type(None)]
    return get_origin(tp) in (Union, types.UnionType) and args == [ToolContext]


@dataclass(slots=True)
class Tool:
    """One tool: its schema, its function, and whether it only reads (may run concurrently)."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    read_only: bool = False
    annotations: dict[str, Any] = field(default_factory=dict)
    context_param: str | None = None
    is_async: bool = False
    timeout: float | None = None
    #: running it twice does no more than running it once: `Agent.resume` may run again a call
    #: that was cut off before its result was stored (docs/durable-runs.md)
    idempotent: bool = False
    #: a person must approve each call first (the turn pauses: docs/durable-runs.md); a callable
    #: ``fn(arguments) -> bool`` decides per call
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 64 or not set(self.name) <= _NAME_OK:
            raise ConfigError(f"tool name {self.name!r} must be 1-64 characters of [A-Za-z0-9_-]")

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    @property
    def may_run_again(self) -> bool:
        """Whether a call cut off before its result was stored may simply be run again."""
        return self.read_only or self.idempotent

    def approval_needed(self, args: dict[str, Any]) -> bool:
        """Whether this call (its validated ``args``) waits for a person's approval."""
        need = self.needs_approval
        return bool(need(args)) if callable(need) else bool(need)

    def check(self, args: Any) -> list[str]:
        return validate(args, self.parameters)

    def bind(self, args: Mapping[str, Any], ctx: ToolContext | None) -> dict[str, Any]:
        """Validated JSON arguments -> keyword arguments of the function (typed, context injected)."""
        kwargs = {k: convert(v, self.annotations[k]) if k in self.annotations else v for k, v in args.items()}
        if self.context_param is not None:
            kwargs[self.context_param] = ctx
        return kwargs

    def schema_text(self) -> str:
        return json.dumps(self.parameters, sort_keys=True, ensure_ascii=False)


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    timeout: float | None = None,
    idempotent: bool = False,
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False,
) -> Tool:
    params, annotations, injected = function_schema(fn, _is_context)
    if len(injected) > 1:
        raise SchemaError(f"tool {fn.__name__}: at most one ToolContext parameter")
    desc, _ = parse_docstring(fn.__doc__)
    return Tool(
        name=name or fn.__name__,
        description=description if description is not None else desc,
        parameters=params,
        fn=fn,
        read_only=read_only,
        annotations=annotations,
        context_param=injected[0] if injected else None,
        is_async=inspect.iscoroutinefunction(fn),
        timeout=timeout,
        idempotent=idempotent,
        needs_approval=needs_approval,
    )


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    timeout: float | None = None,
    idempotent: bool = False,
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    timeout: float | None = None,
    idempotent: bool = False,
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: ``@tool`` or ``@tool(read_only=True, name="x")``. The docstring describes the tool
    (``Args:`` lines describe parameters); type hints give the JSON schema. ``idempotent`` and
    ``needs_approval`` (a flag, or ``fn(arguments) -> bool`` per call): docs/durable-runs.md."""
    if fn is not None:
        return make_tool(fn)

    def wrap(f: Callable[..., Any]) -> Tool:
        return make_tool(
            f,
            name=name,
            description=description,
            read_only=read_only,
            timeout=timeout,
            idempotent=idempotent,
            needs_approval=needs_approval,
        )

    return wrap


class ToolRegistry:
    """Tools by name; schemas sorted by name and cached so the prompt prefix stays byte-stable.

    Besides tools and typed functions it takes :class:`~foldlog.tools.toolset.Toolset` objects
    (MCP servers), whose tools join when the registry is prepared (`prepare`, which the agent
    awaits when a run starts and before each request). A toolset's tool keeps its own name
    unless another toolset or an own tool offers the same name: then it is named
    ``<toolset>__<tool>``."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any] | Toolset] = ()) -> None:
        self._own: dict[str, Tool] = {}
        self._tools: dict[str, Tool] = {}
        self._owners: dict[str, str] = {}  # tool name -> its toolset's name
        self._sets: list[Toolset] = []
        self._listed: dict[int, Sequence[Tool]] = {}  # id(toolset) -> its last listing
        self._schemas: tuple[dict[str, Any], ...] | None = None
        for t in tools:
            if isinstance(t, Toolset) and not isinstance(t, Tool):
                self.add_toolset(t)
            else:
                self.register(t)

    def register(self, t: Tool | Callable[..., Any]) -> Tool:
        if not isinstance(t, Tool):
            if not callable(t):
                raise SchemaError(f"not a tool, function or toolset: {t!r}")
            t = make_tool(t)
        if t.name in self._own:
            raise ConfigError(f"a tool named {t.name!r} is already registered")
        self._own[t.name] = t
        self._merge()
        return t

    def unregister(self, name: str) -> Tool | None:
        """Remove an own tool (not a toolset's); the tool, or ``None`` when there was none."""
        t = self._own.pop(name, None)
        if t is not None:
            self._merge()
        return t

    def add_toolset(self, toolset: Toolset) -> None:
        if any(s is toolset for s in self._sets):
            raise ConfigError(f"toolset {toolset.name!r} is already in this registry")
        if any(s.name == toolset.name for s in self._sets):
            raise ConfigError(f"two toolsets are named {toolset.name!r}: give one another name")
        self._sets.append(toolset)

    @property
    def toolsets(self) -> tuple[Toolset, ...]:
        return tuple(self._sets)

    @property
    def needs_prepare(self) -> bool:
        """Whether a toolset was never listed or says its tools changed."""
        return any(id(s) not in self._listed or s.stale for s in self._sets)

    async def prepare(self) -> None:
        """List the toolsets not listed yet and those whose tools changed (cheap when none)."""
        if not self._sets or not self.needs_prepare:
            return
        for s in self._sets:
            if id(s) not in self._listed or s.stale:
                self._listed[id(s)] = tuple(await s.list_tools())
        self._merge()

    async def aclose(self) -> None:
        """Close every toolset's connection (the tools stay listed; a later `prepare` lists the
        toolsets that say their tools may have changed, opening them again)."""
        for s in self._sets:
            await s.aclose()

    def owner(self, name: str) -> str | None:
        """The name of the toolset that offers tool ``name`` (``None``: an own tool)."""
        return self._owners.get(name)

    def _merge(self) -> None:
        counts: dict[str, int] = {}
        for name in self._own:
            counts[name] = counts.get(name, 0) + 1
        for s in self._sets:
            for t in self._listed.get(id(s), ()):
                counts[t.name] = counts.get(t.name, 0) + 1
        merged = dict(self._own)
        owners: dict[str, str] = {}
        for s in self._sets:
            for t in self._listed.get(id(s), ()):
                name = t.name if counts[t.name] == 1 else f"{s.name}__{t.name}"[:64]
                if name in merged:
                    raise ConfigError(
                        f"toolset {s.name!r}: tool name {name!r} is offered twice; rename a server or a tool"
                    )
                merged[name] = t if name == t.name else dataclasses.replace(t, name=name)
                owners[name] = s.name
        old = self._schemas
        self._tools, self._owners = merged, owners
        self._schemas = None
        if old is not None:
            # the same tools give the same cached tuple (the agent logs a header only on a change)
            new = self.schemas()
            if new == old:
                self._schemas = old

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(sorted(self._tools.values(), key=lambda t: t.name))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return sorted(self._tools)

    def schemas(self) -> tuple[dict[str, Any], ...]:
        if self._schemas is None:
            # A JSON round trip with sorted keys fixes the byte form and detaches the cache.
            self._schemas = tuple(json.loads(json.dumps(t.schema, sort_keys=True)) for t in self)
        return self._schemas

    def schemas_json(self) -> str:
        return json.dumps(list(self.schemas()), sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    def without(self, *names: str) -> ToolRegistry:
        return ToolRegistry(t for t in self if t.name not in names)
