"""The provider contract: one streamed chat completion, as typed chunks.

A provider never touches the session; the agent logs what it yields. Every provider
(OpenAI-compatible over httpx, DeepSeek, the local model, the scripted test provider)
implements :class:`Provider`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from foldlog.log.wire import WireMessages
    from foldlog.providers.content import ContentIndex

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


# --- chunks ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str
    kind: Literal["text"] = "text"


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    text: str
    kind: Literal["reasoning"] = "reasoning"


@dataclass(frozen=True, slots=True)
class ThinkingBlock:
    """A complete block of signed reasoning, to be kept in the log and sent back verbatim
    (Anthropic: ``{"type":"thinking","thinking","signature"}`` or
    ``{"type":"redacted_thinking","data"}``). Its text, if any, also streamed as
    :class:`ReasoningDelta` pieces; this chunk carries the block whole, after them."""

    block: Mapping[str, str]
    kind: Literal["thinking_block"] = "thinking_block"


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """A call's name is known (emitted once per call, as soon as it streams in)."""

    index: int
    id: str
    name: str
    kind: Literal["tool_call_start"] = "tool_call_start"


@dataclass(frozen=True, slots=True)
class ToolCallChunk:
    """A complete tool call (emitted at the end of the stream, in index order)."""

    call: ToolCall
    kind: Literal["tool_call"] = "tool_call"


@dataclass(frozen=True, slots=True)
class UsageChunk:
    usage: Usage
    kind: Literal["usage"] = "usage"


@dataclass(frozen=True, slots=True)
class Done:
    """The stream ended normally. ``finish_reason`` ``length`` is the max-tokens case."""

    finish_reason: FinishReason = "stop"
    kind: Literal["done"] = "done"


@dataclass(frozen=True, slots=True)
class ErrorChunk:
    """A fatal error reported inside the stream (an ``error`` object)."""

    error: BaseException
    kind: Literal["error"] = "error"


Chunk = (
    TextDelta
    | ReasoningDelta
    | ThinkingBlock
    | ToolCallStart
    | ToolCallChunk
    | UsageChunk
    | Done
    | ErrorChunk
)


def token_int(value: Any) -> int:
    """A token count as a provider reported it: an int (not a bool), else 0 (absent, null or
    malformed fields count nothing)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def stream_end(calls: Sequence[ToolCall], usage: Usage | None, finish: FinishReason) -> Iterator[Chunk]:
    """How every stream ends, whatever the provider: the complete calls in index order, the usage
    (when the provider reported one), then `Done`."""
    for call in calls:
        yield ToolCallChunk(call)
    if usage is not None:
        yield UsageChunk(usage)
    yield Done(finish)


def chunk_data(chunk: Chunk) -> dict[str, Any]:
    """A stream chunk as the data of an ``assistant/chunk`` event (kinds named as in the seed's
    example log: ``text-delta``, ``tool-call-delta``, …)."""
    if isinstance(chunk, TextDelta):
        return {"type": "text-delta", "text": chunk.text}
    if isinstance(chunk, ReasoningDelta):
        return {"type": "reasoning-delta", "text": chunk.text}
    if isinstance(chunk, ThinkingBlock):
        return {"type": "thinking-block", "block": dict(chunk.block)}
    if isinstance(chunk, ToolCallStart):
        return {"type": "tool-call-start", "index": chunk.index, "id": chunk.id, "name": chunk.name}
    if isinstance(chunk, ToolCallChunk):
        c = chunk.call
        return {"type": "tool-call-delta", "id": c.id, "name": c.name, "arguments": c.arguments}
    if isinstance(chunk, UsageChunk):
        return {"type": "usage", "usage": chunk.usage.to_dict()}
    if isinstance(chunk, Done):
        return {"type": "finish", "reason": chunk.finish_reason}
    return {"type": "error", "message": f"{type(chunk.error).__name__}: {chunk.error}"}


@dataclass(frozen=True, slots=True)
class Request:
    """One chat-completion request. ``messages`` is exactly the session's wire messages.

    ``wire``, when set, holds the same messages serialised by the session's core: a provider
    whose wire style matches sends those cached segments instead of encoding ``messages``
    (only while ``wire.messages is messages``: a hook that swaps the messages disables it).
    ``content``, when set, indexes the non-text blocks of ``messages`` (kept incrementally by
    the agent) for the provider's check of what it can send; trusted on the same terms.
    """

    messages: Sequence[Mapping[str, Any]]
    tools: Sequence[Mapping[str, Any]] = ()
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    params: Mapping[str, Any] = field(default_factory=dict)
    wire: WireMessages | None = None
    content: ContentIndex | None = None


@runtime_checkable
class Provider(Protocol):
    """Streams one chat completion.

    A provider may also declare ``content_types``: the content block types it can send
    (``foldlog.providers.content``; absent or ``None``: anything), checked before sending."""

    model: str

    @property
    def context_window(self) -> int | None: ...

    def stream(self, request: Request) -> AsyncIterator[Chunk]: ...

    async def aclose(self) -> None: ...
