"""Model providers. Each is imported on first use so ``import foldlog`` stays fast."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes
from foldlog.providers.base import (
    Chunk,
    Done,
    ErrorChunk,
    Provider,
    ReasoningDelta,
    Request,
    TextDelta,
    ThinkingBlock,
    ToolCall,
    ToolCallChunk,
    ToolCallStart,
    Usage,
    UsageChunk,
)

# eager (light: it needs only .base): a lazy `collect` would lose to the submodule of the same name
# once anything imported `foldlog.providers.collect` (the import system sets it on the package)
from foldlog.providers.collect import Completion, collect

# public name -> module defining it (PEP 562 lazy attributes: httpx and friends load on use)
_LAZY = by_module(
    {
        "foldlog.providers.anthropic": ("Anthropic",),
        "foldlog.providers.openai_compat": ("OpenAICompatible",),
        "foldlog.providers.deepseek": ("DeepSeek",),
        "foldlog.providers.openai": ("OpenAI",),
        "foldlog.providers.local": ("LocalLlama",),
        "foldlog.providers.llama_server": ("LlamaServer",),
        "foldlog.providers.retry": ("RetryPolicy",),
        "foldlog.cost.prices": ("Price",),
        "foldlog.providers.scripted": ("Scripted",),
    }
)

if TYPE_CHECKING:
    from foldlog.cost.prices import Price
    from foldlog.providers.anthropic import Anthropic
    from foldlog.providers.deepseek import DeepSeek
    from foldlog.providers.llama_server import LlamaServer
    from foldlog.providers.local import LocalLlama
    from foldlog.providers.openai import OpenAI
    from foldlog.providers.openai_compat import OpenAICompatible
    from foldlog.providers.retry import RetryPolicy
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
