"""foldlog — host LLM agents at volume.

The session log is the single source of truth; the history a model sees is derived from it.
Public names are imported lazily so that ``import foldlog`` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes
from foldlog.errors import (
    APIError,
    ApprovalRequired,
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
    NoUnfinishedTurnError,
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
_LAZY = by_module(
    {
        # written once, in Cargo.toml (the extension reports the version it was built as)
        "foldlog._core": ("__version__",),
        "foldlog.log.session": ("Session",),
        "foldlog.log.tokens": ("Tokenizer", "count_tokens", "TokenCount"),
        "foldlog.agent.loop": ("Agent",),
        "foldlog.agent.options": ("Options",),
        "foldlog.tools.registry": ("tool", "Tool", "ToolRegistry"),
        "foldlog.agent.subagent": ("run_subagent",),
        "foldlog.providers": ("OpenAICompatible", "DeepSeek", "OpenAI", "LocalLlama"),
        "foldlog.compaction.compactor": ("Compactor", "CompactionResult"),
        "foldlog.log.frozen": ("thaw",),
        # needs the `mcp` extra (its SDK is imported only when a server connects)
        "foldlog.mcp.server": ("MCPServer",),
    }
)

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
    "ApprovalRequired",
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
    "NoUnfinishedTurnError",
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
