"""Drain a provider stream into one :class:`Completion` (scripts, tests, summaries)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from foldlog.log.grammar.types import FinishReason, ToolCall, Usage
from foldlog.log.text import clean_text
from foldlog.providers.base import Chunk, ToolCallStart


@dataclass(slots=True)
class Completion:
    text: str = ""
    reasoning: str = ""
    #: signed reasoning blocks (Anthropic thinking / redacted_thinking), whole, in order
    thinking_blocks: list[dict[str, str]] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)
    started: list[ToolCallStart] = field(default_factory=list)
    usage: Usage | None = None
    finish_reason: FinishReason | None = None
    chunks: int = 0

    def message(self) -> dict[str, object]:
        """The assistant message in OpenAI chat shape (``reasoning_content`` when there is some)."""
        msg: dict[str, object] = {"role": "assistant", "content": self.text}
        if self.reasoning:
            msg["reasoning_content"] = self.reasoning
        if self.thinking_blocks:
            msg["thinking_blocks"] = [dict(b) for b in self.thinking_blocks]
        if self.tool_calls:
            msg["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        return msg


async def collect(stream: AsyncIterator[Chunk]) -> Completion:
    """Read a whole stream; an ``error`` chunk is raised. Pieces are joined once at the end (and
    made valid Unicode: `foldlog.log.text.clean_text`)."""
    text: list[str] = []
    reasoning: list[str] = []
    out = Completion()
    async for chunk in stream:
        out.chunks += 1
        if chunk.kind == "text":
            text.append(chunk.text)
        elif chunk.kind == "reasoning":
            reasoning.append(chunk.text)
        elif chunk.kind == "thinking_block":
            out.thinking_blocks.append(dict(chunk.block))
        elif chunk.kind == "tool_call_start":
            out.started.append(chunk)
        elif chunk.kind == "tool_call":
            out.tool_calls.append(chunk.call)
        elif chunk.kind == "usage":
            out.usage = chunk.usage
        elif chunk.kind == "done":
            out.finish_reason = chunk.finish_reason
        elif chunk.kind == "error":
            raise chunk.error
    # valid Unicode: a surrogate pair split across two pieces joined, a lone one replaced
    out.text = clean_text("".join(text))[0]
    out.reasoning = clean_text("".join(reasoning))[0]
    for i, call in enumerate(out.tool_calls):
        if not call.arguments.isascii():
            out.tool_calls[i] = dataclasses.replace(call, arguments=clean_text(call.arguments)[0])
    return out
