"""Turn Anthropic Messages API stream events (decoded JSON objects) into foldlog chunks.

One :class:`MessagesStreamAssembler` per response. The stream is ``message_start``, then per
content block ``content_block_start`` → ``content_block_delta``… → ``content_block_stop``, then
one ``message_delta`` (stop reason, final usage) and ``message_stop``; ``ping`` anywhere. Blocks:
``text`` (``text_delta``), ``tool_use`` (``input_json_delta`` fragments whose concatenation is
the input JSON; none or only ``""`` means ``{}``), ``thinking`` (``thinking_delta`` then one
``signature_delta``) and ``redacted_thinking`` (its opaque ``data`` whole in the start event).
A non-streamed response (the whole message object) is fed through :meth:`feed_message`.

An ``error`` event is not turned into a chunk here: the provider handles it like a cut
(:mod:`foldlog.providers.anthropic.provider`), so it is only recorded in :attr:`error`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from foldlog.errors import StreamProtocolError
from foldlog.log.grammar.types import FinishReason, ToolCall, Usage, token_int
from foldlog.providers.base import (
    Chunk,
    Done,
    ReasoningDelta,
    TextDelta,
    ThinkingBlock,
    ToolCallChunk,
    ToolCallStart,
    UsageChunk,
)
from foldlog.providers.http.assemble import AssembledText

#: ``stop_reason`` → foldlog's finish reason (``pause_turn``: a server-side tool paused the turn;
#: foldlog hosts its tools itself, so the reply so far is the answer)
STOP_REASONS: Mapping[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}


def parse_usage(raw: Mapping[str, Any]) -> Usage:
    """A Messages API usage object: ``input_tokens`` is the uncached part of the prompt (the
    miss), ``cache_read_input_tokens`` the hit, ``cache_creation_input_tokens`` the write; the
    prompt is their sum."""
    miss = token_int(raw.get("input_tokens"))
    hit = token_int(raw.get("cache_read_input_tokens"))
    write = token_int(raw.get("cache_creation_input_tokens"))
    details = raw.get("output_tokens_details")
    thinking = token_int(details.get("thinking_tokens")) if isinstance(details, Mapping) else 0
    return Usage(
        prompt_tokens=miss + hit + write,
        completion_tokens=token_int(raw.get("output_tokens")),
        cache_hit_tokens=hit,
        cache_miss_tokens=miss,
        reasoning_tokens=thinking,
        cache_write_tokens=write,
    )


@dataclass(slots=True)
class _Block:
    type: str
    text: list[str] = field(default_factory=list)
    signature: str = ""
    data: str = ""
    # tool_use
    call_index: int = -1


class MessagesStreamAssembler(AssembledText):
    """Feed decoded stream events; get foldlog chunks. Call :meth:`finish` at a normal end."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._blocks: dict[int, _Block] = {}
        self._calls: list[tuple[str, str, list[str]]] = []
        self._usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.stop_sequence: str | None = None
        self.stopped = False  # message_stop seen
        self.error: Mapping[str, Any] | None = None
        self.message_id: str | None = None
        self.model: str | None = None

    # --- what has been assembled so far -----------------------------------------------------

    @property
    def finished(self) -> bool:
        """The reply is complete: ``message_stop`` came (or a ``message_delta`` with a stop
        reason, for a server that ends the body without ``message_stop``)."""
        return self.stopped or self.stop_reason is not None

    @property
    def usage(self) -> Usage | None:
        return parse_usage(self._usage) if self._usage else None

    # --- feeding ----------------------------------------------------------------------------

    def feed(self, obj: Any, event: str = "message") -> list[Chunk]:
        if not isinstance(obj, Mapping):
            raise StreamProtocolError(f"a stream event must be a JSON object, got {type(obj).__name__}")
        kind = obj.get("type")
        if not isinstance(kind, str):
            kind = event
        out: list[Chunk] = []
        if kind == "message_start":
            message = obj.get("message")
            if isinstance(message, Mapping):
                self._start(message)
        elif kind == "content_block_start":
            block = obj.get("content_block")
            if isinstance(block, Mapping):
                self._block_start(token_int(obj.get("index")), block, out)
        elif kind == "content_block_delta":
            delta = obj.get("delta")
            if isinstance(delta, Mapping):
                self._block_delta(token_int(obj.get("index")), delta, out)
        elif kind == "content_block_stop":
            self._block_stop(token_int(obj.get("index")), out)
        elif kind == "message_delta":
            delta = obj.get("delta")
            if isinstance(delta, Mapping):
                self._stop(delta)
            usage = obj.get("usage")
            if isinstance(usage, Mapping):
                # the final counts replace the provisional ones; fields it lacks stay
                self._usage.update({k: v for k, v in usage.items() if v is not None})
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            err = obj.get("error")
            self.error = err if isinstance(err, Mapping) else {"message": str(obj)}
        # ping and event types added later: nothing to do
        return out

    def feed_message(self, message: Mapping[str, Any]) -> list[Chunk]:
        """A whole (non-streamed) message object, as the same chunks its stream would give."""
        out: list[Chunk] = []
        self._start(message)
        content = message.get("content")
        for i, block in enumerate(content if isinstance(content, list) else []):
            if not isinstance(block, Mapping):
                continue
            self._block_start(i, block, out)
            b = self._blocks.get(i)
            if b is not None and b.type == "tool_use":  # text and thinking came with the start
                raw = block.get("input")
                args = json.dumps(raw, ensure_ascii=False) if raw is not None else "{}"
                self._calls[b.call_index][2].append(args)
            self._block_stop(i, out)
        self._stop(message)
        self.stopped = True
        return out

    def _start(self, message: Mapping[str, Any]) -> None:
        mid, model = message.get("id"), message.get("model")
        self.message_id = mid if isinstance(mid, str) else None
        self.model = model if isinstance(model, str) else None
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            self._usage.update({k: v for k, v in usage.items() if v is not None})

    def _stop(self, delta: Mapping[str, Any]) -> None:
        reason = delta.get("stop_reason")
        if isinstance(reason, str) and reason:
            self.stop_reason = reason
        seq = delta.get("stop_sequence")
        if isinstance(seq, str):
            self.stop_sequence = seq

    def _block_start(self, index: int, block: Mapping[str, Any], out: list[Chunk]) -> None:
        kind = block.get("type")
        b = _Block(kind if isinstance(kind, str) else "?")
        self._blocks[index] = b
        if b.type == "text":
            piece = block.get("text")
            if isinstance(piece, str) and piece:  # a start holds "" in every recorded stream
                self._emit_text(piece, out)
        elif b.type == "thinking":
            piece = block.get("thinking")
            if isinstance(piece, str) and piece:
                b.text.append(piece)
                self._emit_reasoning(piece, out)
            sig = block.get("signature")
            b.signature = sig if isinstance(sig, str) else ""
        elif b.type == "redacted_thinking":
            data = block.get("data")
            b.data = data if isinstance(data, str) else ""
        elif b.type == "tool_use":
            cid, name = block.get("id"), block.get("name")
            cid = cid if isinstance(cid, str) and cid else f"toolu_{len(self._calls)}"
            name = name if isinstance(name, str) else ""
            b.call_index = len(self._calls)
            self._calls.append((cid, name, []))
            if name:
                out.append(ToolCallStart(b.call_index, cid, name))

    def _block_delta(self, index: int, delta: Mapping[str, Any], out: list[Chunk]) -> None:
        b = self._blocks.get(index)
        kind = delta.get("type")
        if kind == "text_delta":
            piece = delta.get("text")
            if isinstance(piece, str) and piece:
                self._emit_text(piece, out)
        elif kind == "thinking_delta":
            piece = delta.get("thinking")
            if isinstance(piece, str) and piece:
                if b is not None:
                    b.text.append(piece)
                self._emit_reasoning(piece, out)
        elif kind == "signature_delta":
            sig = delta.get("signature")
            if b is not None and isinstance(sig, str):
                b.signature += sig
        elif kind == "input_json_delta":
            piece = delta.get("partial_json")
            if b is not None and b.call_index >= 0 and isinstance(piece, str) and piece:
                self._calls[b.call_index][2].append(piece)

    def _block_stop(self, index: int, out: list[Chunk]) -> None:
        b = self._blocks.get(index)
        if b is None:
            return
        if b.type == "thinking" and b.signature:
            # only a signed block can go back; unsigned reasoning stays reasoning_content
            out.append(
                ThinkingBlock({"type": "thinking", "thinking": "".join(b.text), "signature": b.signature})
            )
        elif b.type == "redacted_thinking" and b.data:
            out.append(ThinkingBlock({"type": "redacted_thinking", "data": b.data}))

    # --- output -----------------------------------------------------------------------------

    def _emit_text(self, piece: str, out: list[Chunk]) -> None:
        self._text.append(piece)
        out.append(TextDelta(piece))

    def _emit_reasoning(self, piece: str, out: list[Chunk]) -> None:
        self._reasoning.append(piece)
        out.append(ReasoningDelta(piece))

    def tool_calls(self) -> list[ToolCall]:
        calls = []
        for cid, name, parts in self._calls:
            if not name:
                continue  # a call whose name never came cannot be run
            args = "".join(parts)
            calls.append(ToolCall(cid, name, args if args.strip() else "{}"))
        return calls

    def finish(self) -> list[Chunk]:
        """The stream ended normally: complete calls (in order), usage, done."""
        out: list[Chunk] = []
        calls = self.tool_calls()
        out.extend(ToolCallChunk(c) for c in calls)
        usage = self.usage
        if usage is not None:
            out.append(UsageChunk(usage))
        reason = STOP_REASONS.get(self.stop_reason or "end_turn", "stop")
        if calls and reason == "stop":
            reason = "tool_calls"
        out.append(Done(reason))
        return out


__all__ = ["STOP_REASONS", "MessagesStreamAssembler", "parse_usage"]
