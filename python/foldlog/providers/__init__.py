"""Model providers. Each is imported on first use so ``import foldlog`` stays fast."""

from __future__ import annotations

from foldlog.providers.base import (
    Chunk,
    Done,
    ErrorChunk,
    Provider,
    ReasoningDelta,
    Request,
    TextDelta,
    ToolCall,
    ToolCallChunk,
    ToolCallStart,
    Usage,
    UsageChunk,
)


def __getattr__(name: str) -> object:
    # Scripted is test/example tooling: loaded on first use only.
    if name == "Scripted":
        from foldlog.providers.scripted import Scripted

        return Scripted
    raise AttributeError(f"module 'foldlog.providers' has no attribute {name!r}")


__all__ = [
    "Chunk",
    "Done",
    "ErrorChunk",
    "Provider",
    "ReasoningDelta",
    "Request",
    "Scripted",
    "TextDelta",
    "ToolCall",
    "ToolCallChunk",
    "ToolCallStart",
    "Usage",
    "UsageChunk",
]
