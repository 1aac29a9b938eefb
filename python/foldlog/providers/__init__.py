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

__all__ = [
    "Chunk",
    "Done",
    "ErrorChunk",
    "Provider",
    "ReasoningDelta",
    "Request",
    "TextDelta",
    "ToolCall",
    "ToolCallChunk",
    "ToolCallStart",
    "Usage",
    "UsageChunk",
]
