"""Tools and the registry: ``@tool`` turns a typed function into a model-callable tool."""

from __future__ import annotations

import inspect
import json
import types
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Union, get_args, get_origin, overload

from foldlog.errors import ConfigError
from foldlog.tools.host import ToolContext
from foldlog.tools.schema import SchemaError, convert, function_schema, parse_docstring, validate

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
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Decorator: ``@tool`` or ``@tool(read_only=True, name="x")``. The docstring describes the tool
    (``Args:`` lines describe parameters); type hints give the JSON schema."""
    if fn is not None:
        return make_tool(fn)

    def wrap(f: Callable[..., Any]) -> Tool:
        return make_tool(f, name=name, description=description, read_only=read_only, timeout=timeout)

    return wrap


class ToolRegistry:
    """Tools by name; schemas sorted by name and cached so the prompt prefix stays byte-stable."""

    def __init__(self, tools: Iterable[Tool | Callable[..., Any]] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._schemas: tuple[dict[str, Any], ...] | None = None
        for t in tools:
            self.register(t)

    def register(self, t: Tool | Callable[..., Any]) -> Tool:
        if not isinstance(t, Tool):
            if not callable(t):
                raise SchemaError(f"not a tool or function: {t!r}")
            t = make_tool(t)
        if t.name in self._tools:
            raise ConfigError(f"a tool named {t.name!r} is already registered")
        self._tools[t.name] = t
        self._schemas = None
        return t

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
