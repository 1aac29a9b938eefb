"""The conversation's shared types: a tool call, a request's token usage, why a reply finished.

They are part of the log's grammar (an ``assistant/message`` holds the calls and the usage) and
are used by every layer that reads or writes a conversation — providers make them from a stream,
the agent logs them, cost prices them, compaction and tools read them. They live here, below all
of those; `foldlog.providers` re-exports them where they were always imported from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

FinishReason = Literal["stop", "tool_calls", "length", "content_filter", "cut"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A complete tool call as the model asked for it. ``arguments`` is the model's raw JSON text."""

    id: str
    name: str
    arguments: str

    def to_openai(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(slots=True)
class Usage:
    """Token usage of one request as the provider reported it.

    ``prompt_tokens`` counts every input token, cache reads and cache writes included;
    ``cache_hit_tokens`` are the cache reads, ``cache_miss_tokens`` the rest of the input (cache
    writes included), ``cache_write_tokens`` the part of the misses written to the cache
    (Anthropic's cache creation; 0 where a provider does not report it). ``completion_tokens``
    counts every output token, ``reasoning_tokens`` included."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    reasoning_tokens: int = 0
    #: prompt tokens written to the provider's cache by this request (Anthropic's
    #: ``cache_creation_input_tokens``; priced apart from hits and misses). For Anthropic,
    #: ``prompt_tokens`` = hits + misses + writes.
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def cache_hit_rate(self) -> float:
        return self.cache_hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def to_dict(self) -> dict[str, int]:
        """The ``usage`` of an ``assistant/message`` event (``cacheWriteTokens`` only when non-zero,
        so logs of providers without cache writes keep their shape)."""
        out = {
            "promptTokens": self.prompt_tokens,
            "completionTokens": self.completion_tokens,
            "cacheHitTokens": self.cache_hit_tokens,
            "cacheMissTokens": self.cache_miss_tokens,
            "reasoningTokens": self.reasoning_tokens,
        }
        if self.cache_write_tokens:
            out["cacheWriteTokens"] = self.cache_write_tokens
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Usage:
        """The usage a log recorded (`to_dict`'s keys; OpenAI's snake_case names are read too)."""

        def num(*keys: str) -> int:
            for k in keys:
                v = data.get(k)
                if isinstance(v, int) and not isinstance(v, bool):
                    return v
            return 0

        prompt = num("promptTokens", "prompt_tokens")
        hit = num("cacheHitTokens", "cache_hit_tokens")
        miss = (
            num("cacheMissTokens", "cache_miss_tokens")
            if ("cacheMissTokens" in data or "cache_miss_tokens" in data)
            else max(prompt - hit, 0)
        )
        return cls(
            prompt_tokens=prompt,
            completion_tokens=num("completionTokens", "completion_tokens"),
            cache_hit_tokens=hit,
            cache_miss_tokens=miss,
            reasoning_tokens=num("reasoningTokens", "reasoning_tokens"),
            cache_write_tokens=num("cacheWriteTokens", "cache_write_tokens"),
        )


def token_int(value: Any) -> int:
    """A token count as a provider reported it: an int (not a bool), else 0 (absent, null or
    malformed fields count nothing)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


__all__ = ["FinishReason", "ToolCall", "Usage", "token_int"]
