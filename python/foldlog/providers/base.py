"""The provider contract: one streamed chat completion, as typed chunks.

A provider never touches the session; the agent logs what it yields. Every provider
(OpenAI-compatible over httpx, DeepSeek, the local model, the scripted test provider)
implements :class:`Provider`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from foldlog.log.grammar.types import FinishReason, ToolCall, Usage

if TYPE_CHECKING:
    from foldlog.cost.prices import Price
    from foldlog.log.wire import WireMessages
    from foldlog.providers.content import ContentIndex

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
    """Streams one chat completion: the members every provider has.

    The optional abilities (``content_types``, ``structured_output``, ``wire_style()``,
    ``price_provider``, ``prices``, ``requests_sent``) are declared by :class:`ProviderBase`, which
    every provider of this package inherits; `declared` reads them for any provider."""

    model: str

    @property
    def context_window(self) -> int | None: ...

    def stream(self, request: Request) -> AsyncIterator[Chunk]: ...

    async def aclose(self) -> None: ...


class ProviderBase:
    """The optional abilities of a provider, declared with their defaults (docs/providers.md,
    "Abilities"). Every provider of this package inherits it and overrides what it has; a
    provider of your own inherits it to declare any. One that implements only `Provider` gets
    these defaults through `declared`."""

    # no instance state here: the defaults are class attributes, and `_DEFAULTS` (below) an
    # instance that cannot be changed by accident
    __slots__ = ()

    #: the content block types the provider can send (`foldlog.providers.content`), checked
    #: before sending; ``None``: anything (the agent then does not index the request's blocks)
    content_types: frozenset[str] | None = None
    #: the endpoint honours ``response_format`` json_schema: a typed run sends its schema there
    #: instead of offering a final-answer tool (docs/output.md)
    structured_output: bool = False
    #: the `genai-prices` provider id its requests are priced under (``"deepseek"``, ``"openai"``);
    #: ``None``: found from the model name (`foldlog.cost`); also ``gen_ai.provider.name``
    price_provider: str | None = None
    #: the provider's own prices by model (``prices=``), before `genai-prices`; ``None``: none
    prices: Mapping[str, Price] | None = None
    #: the requests the provider has sent, retries and replays included (the CLI's usage line);
    #: ``None``: it does not count them (the CLI counts usage reports instead)
    requests_sent: int | None = None

    def wire_style(self) -> str | None:
        """The style of the core's cached message JSON the provider sends as it is
        (`foldlog.log.wire`: ``"keep"``, ``"strip"``, ``"with-calls"``); ``None``: it builds its
        messages itself, and the agent asks the session for no wire JSON."""
        return None


#: the abilities of a provider that declares none (`declared`)
_DEFAULTS = ProviderBase()


def declared(provider: Provider) -> ProviderBase:
    """The declared abilities of ``provider``: the provider itself when it inherits
    `ProviderBase`, else the defaults (a provider that implements only `Provider`). The one
    place a provider's optional abilities are looked up; read them as attributes of the result."""
    return provider if isinstance(provider, ProviderBase) else _DEFAULTS
