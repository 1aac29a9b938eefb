"""Tools: ``@tool``, the registry, the batch runner and the opt-in workspace built-ins."""

from __future__ import annotations

from foldlog.tools.registry import Tool, ToolRegistry, make_tool, tool
from foldlog.tools.schema import SchemaError, function_schema, type_schema, validate

__all__ = [
    "SchemaError",
    "Tool",
    "ToolRegistry",
    "function_schema",
    "make_tool",
    "tool",
    "type_schema",
    "validate",
]
