"""Model providers. Each is imported on first use so ``import foldlog`` stays fast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes
from foldlog.log.grammar.types import ToolCall, Usage
from foldlog.providers.base import (
    Chunk,
    Done,
    ErrorChunk,
    Provider,
    ReasoningDelta,
    Request,
    TextDelta,
    ThinkingBlock,
    ToolCallChunk,
    ToolCallStart,
    UsageChunk,
)

# eager (light: it needs only .base): a lazy `collect` would lose to the submodule of the same name
# once anything imported `foldlog.providers.collect` (the import system sets it on the package)
from foldlog.providers.collect import Completion, collect

# public name -> module defining it (PEP 562 lazy attributes: httpx and friends load on use)
_LAZY = by_module(
    {
        "foldlog.providers.anthropic.provider": ("Anthropic",),
        "foldlog.providers.http.openai_compat": ("OpenAICompatible",),
        "foldlog.providers.http.deepseek": ("DeepSeek",),
        "foldlog.providers.http.openai": ("OpenAI",),
        "foldlog.providers.local.provider": ("LocalLlama",),
        "foldlog.providers.local.server": ("LlamaServer",),
        "foldlog.providers.http.retry": ("RetryPolicy",),
        "foldlog.cost.prices": ("Price",),
        "foldlog.providers.scripted": ("Scripted",),
    }
)

if TYPE_CHECKING:
    from foldlog.cost.prices import Price
    from foldlog.providers.anthropic.provider import Anthropic
    from foldlog.providers.http.deepseek import DeepSeek
    from foldlog.providers.http.openai import OpenAI
    from foldlog.providers.http.openai_compat import OpenAICompatible
    from foldlog.providers.http.retry import RetryPolicy
    from foldlog.providers.local.provider import LocalLlama
    from foldlog.providers.local.server import LlamaServer
    from foldlog.providers.scripted import Scripted


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)


__all__ = [
    "Anthropic",
    "Chunk",
    "Completion",
    "DeepSeek",
    "Done",
    "ErrorChunk",
    "LlamaServer",
    "LocalLlama",
    "OpenAI",
    "OpenAICompatible",
    "Price",
    "Provider",
    "ReasoningDelta",
    "Request",
    "RetryPolicy",
    "Scripted",
    "TextDelta",
    "ThinkingBlock",
    "ToolCall",
    "ToolCallChunk",
    "ToolCallStart",
    "Usage",
    "UsageChunk",
    "collect",
]
