"""foldlog — host LLM agents at volume.

The session log is the single source of truth; the history a model sees is derived from it.
Public names are imported lazily so that ``import foldlog`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import lazy_attributes
from foldlog.errors import (
    APIError,
    AuthError,
    BudgetExceeded,
    CompactionError,
    CorruptLogError,
    FoldlogError,
    HookError,
    HookRefused,
    InvalidEventError,
    InvalidHookError,
    MaxStepsExceeded,
    MCPError,
    OutputValidationError,
    ProviderError,
    ProviderTimeout,
    RunCancelled,
    SessionLockedError,
    StorageError,
    StreamInterrupted,
    StreamProtocolError,
    TokenizerError,
    UnsupportedContentError,
    UnsupportedFormatError,
)

# public name -> module that defines it; resolved on first attribute access (PEP 562)
_LAZY: dict[str, str] = {
    # written once, in Cargo.toml (the extension reports the version it was built as)
    "__version__": "foldlog._core",
    "Session": "foldlog.log.session",
    "Tokenizer": "foldlog.log.tokens",
    "count_tokens": "foldlog.log.tokens",
    "Agent": "foldlog.agent.loop",
    "Options": "foldlog.agent.options",
    "tool": "foldlog.tools.registry",
    "Tool": "foldlog.tools.registry",
    "ToolRegistry": "foldlog.tools.registry",
    "run_subagent": "foldlog.agent.subagent",
    "OpenAICompatible": "foldlog.providers",
    "DeepSeek": "foldlog.providers",
    "OpenAI": "foldlog.providers",
    "LocalLlama": "foldlog.providers",
    "Compactor": "foldlog.compaction.compactor",
    "CompactionResult": "foldlog.compaction.compactor",
    "TokenCount": "foldlog.log.tokens",
    "thaw": "foldlog.log.frozen",
    # needs the `mcp` extra (its SDK is imported only when a server connects)
    "MCPServer": "foldlog.mcp.server",
}

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent
    from foldlog.agent.options import Options
    from foldlog.agent.subagent import run_subagent
    from foldlog.compaction.compactor import CompactionResult, Compactor
    from foldlog.log.frozen import thaw
    from foldlog.log.session import Session
    from foldlog.log.tokens import TokenCount, Tokenizer, count_tokens
    from foldlog.mcp.server import MCPServer
    from foldlog.providers import DeepSeek, LocalLlama, OpenAI, OpenAICompatible
    from foldlog.tools.registry import Tool, ToolRegistry, tool


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)


__all__ = [
    "APIError",
    "Agent",
    "AuthError",
    "BudgetExceeded",
    "CompactionError",
    "CompactionResult",
    "Compactor",
    "CorruptLogError",
    "DeepSeek",
    "FoldlogError",
    "HookError",
    "HookRefused",
    "InvalidEventError",
    "InvalidHookError",
    "LocalLlama",
    "MCPError",
    "MCPServer",
    "MaxStepsExceeded",
    "OpenAI",
    "OpenAICompatible",
    "Options",
    "OutputValidationError",
    "ProviderError",
    "ProviderTimeout",
    "RunCancelled",
    "Session",
    "SessionLockedError",
    "StorageError",
    "StreamInterrupted",
    "StreamProtocolError",
    "TokenCount",
    "Tokenizer",
    "TokenizerError",
    "Tool",
    "ToolRegistry",
    "UnsupportedContentError",
    "UnsupportedFormatError",
    "__version__",
    "count_tokens",
    "run_subagent",
    "thaw",
    "tool",
]
