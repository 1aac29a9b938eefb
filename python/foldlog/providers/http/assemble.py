"""Turn decoded chat-completion chunks (JSON objects) into foldlog :mod:`~foldlog.providers.base` chunks.

One :class:`ChatStreamAssembler` per response. It knows every quirk of the OpenAI-compatible
streaming format seen in recorded streams: ``choices: []`` chunks, pieces of 1–3 characters,
tool-call fragments keyed by ``index`` (parallel calls interleave), ``reasoning_content`` /
``reasoning`` fields, a leading ``<think>…</think>`` block in the content, usage in the last
choice chunk or in a separate one, and both cache-hit field names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from foldlog.errors import APIError, StreamProtocolError
from foldlog.log.grammar.types import FinishReason, ToolCall, Usage, token_int
from foldlog.providers.base import Chunk, ErrorChunk, ReasoningDelta, TextDelta, ToolCallStart, stream_end

_THINK_OPEN = "<think>"
_THINK_CLOSE = "</think>"
_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "end_turn": "stop",
    "eos": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "content_filter": "content_filter",
}


def parse_usage(raw: Mapping[str, Any]) -> Usage:
    """Read a usage object in DeepSeek or OpenAI shape (or a mix of both)."""
    prompt = token_int(raw.get("prompt_tokens"))
    completion = token_int(raw.get("completion_tokens"))
    details = raw.get("prompt_tokens_details")
    cached = token_int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    # DeepSeek's own fields are exact (hit + miss = prompt); OpenAI gives only the hit count
    hit = token_int(raw["prompt_cache_hit_tokens"]) if "prompt_cache_hit_tokens" in raw else cached
    if "prompt_cache_miss_tokens" in raw:
        miss = token_int(raw["prompt_cache_miss_tokens"])
    else:
        miss = max(prompt - hit, 0)
    cdetails = raw.get("completion_tokens_details")
    reasoning = token_int(cdetails.get("reasoning_tokens")) if isinstance(cdetails, Mapping) else 0
    reasoning = reasoning or token_int(raw.get("reasoning_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cache_hit_tokens=hit,
        cache_miss_tokens=miss,
        reasoning_tokens=reasoning,
    )


class StreamAssembler(Protocol):
    """What a provider's reader needs of the assembler of one response (chat completions here,
    the Messages API in :mod:`foldlog.providers.anthropic.stream`)."""

    @property
    def text(self) -> str: ...

    @property
    def finished(self) -> bool: ...

    def feed(self, obj: Any, event: str = "message") -> list[Chunk]: ...

    def finish(self) -> list[Chunk]: ...


@dataclass(slots=True)
class _PendingCall:
    index: int
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)
    announced: bool = False


class AssembledText:
    """What every stream assembler keeps of a reply's text and reasoning, piece by piece."""

    _text: list[str]
    _reasoning: list[str]

    @property
    def text(self) -> str:
        return "".join(self._text)

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)


class ChatStreamAssembler(AssembledText):
    """Feed decoded chunk objects; get foldlog chunks. Call :meth:`finish` at a normal end."""

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.error: APIError | None = None
        # leading <think> detection: "start" (undecided), "think" (inside), "text" (plain content)
        self._think_state = "start"
        self._held = ""  # content held back while a tag might still be forming

    # --- what has been assembled so far -----------------------------------------------------

    @property
    def has_output(self) -> bool:
        """Whether anything was (or is about to be) forwarded to the consumer."""
        return bool(self._text or self._reasoning or self._calls or self._held)

    @property
    def finished(self) -> bool:
        return self.finish_reason is not None

    # --- feeding ----------------------------------------------------------------------------

    def feed(self, obj: Any, event: str = "message") -> list[Chunk]:
        if not isinstance(obj, Mapping):
            raise StreamProtocolError(f"a stream chunk must be a JSON object, got {type(obj).__name__}")
        out: list[Chunk] = []
        err = obj.get("error")
        if err is not None or event == "error":
            self.error = _stream_error(err if err is not None else obj)
            out.append(ErrorChunk(self.error))
            return out
        usage = obj.get("usage")
        if isinstance(usage, Mapping):
            self.usage = parse_usage(usage)
        choices = obj.get("choices")
        if not isinstance(choices, list):
            return out
        for choice in choices:
            # foldlog never asks for n > 1; other choices of an n > 1 stream are ignored
            if not isinstance(choice, Mapping) or token_int(choice.get("index")) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                self._delta(delta, out)
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
        return out

    def _delta(self, delta: Mapping[str, Any], out: list[Chunk]) -> None:
        for key in ("reasoning_content", "reasoning"):
            piece = delta.get(key)
            if isinstance(piece, str) and piece:
                self._reasoning.append(piece)
                out.append(ReasoningDelta(piece))
        content = delta.get("content")
        if isinstance(content, str) and content:
            self._content(content, out)
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            # a refusal is the model's answer to the user: keep it as text so it is shown and logged
            self._emit_text(refusal, out)
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            for position, frag in enumerate(calls):
                if isinstance(frag, Mapping):
                    self._call_fragment(position, frag, out)

    def _call_fragment(self, position: int, frag: Mapping[str, Any], out: list[Chunk]) -> None:
        index = frag.get("index")
        idx = index if isinstance(index, int) and not isinstance(index, bool) else position
        call = self._calls.get(idx)
        if call is None:
            call = self._calls[idx] = _PendingCall(idx)
        cid = frag.get("id")
        if isinstance(cid, str) and cid and not call.id:
            call.id = cid
        fn = frag.get("function")
        if isinstance(fn, Mapping):
            name = fn.get("name")
            if isinstance(name, str) and name and not call.name:
                call.name = name
            args = fn.get("arguments")
            if isinstance(args, str) and args:
                call.arguments.append(args)
            elif isinstance(args, Mapping):  # a few servers send parsed arguments
                import json

                call.arguments.append(json.dumps(args, ensure_ascii=False))
        if call.name and not call.announced:
            call.announced = True
            out.append(ToolCallStart(idx, call.id or f"call_{idx}", call.name))

    # --- content and the leading <think> block ----------------------------------------------

    def _emit_text(self, piece: str, out: list[Chunk]) -> None:
        self._text.append(piece)
        out.append(TextDelta(piece))

    def _emit_reasoning(self, piece: str, out: list[Chunk]) -> None:
        if piece:
            self._reasoning.append(piece)
            out.append(ReasoningDelta(piece))

    def _content(self, piece: str, out: list[Chunk]) -> None:
        state = self._think_state
        if state == "text":
            self._emit_text(piece, out)
            return
        if state == "after":  # drop the blank lines between "</think>" and the answer
            piece = piece.lstrip()
            if piece:
                self._think_state = "text"
                self._emit_text(piece, out)
            return
        held = self._held + piece
        if state == "start":
            stripped = held.lstrip()
            if stripped.startswith(_THINK_OPEN):
                self._think_state = "think"
                held = stripped[len(_THINK_OPEN) :]
            elif _THINK_OPEN.startswith(stripped):
                self._held = held  # "<thi" so far: wait for more
                return
            else:
                self._think_state = "text"
                self._held = ""
                self._emit_text(held, out)
                return
        # inside the think block: forward reasoning, but hold back a possible partial "</think>"
        end = held.find(_THINK_CLOSE)
        if end >= 0:
            self._emit_reasoning(held[:end], out)
            self._think_state = "text"
            self._held = ""
            rest = held[end + len(_THINK_CLOSE) :].lstrip()
            if rest:
                self._emit_text(rest, out)
            else:
                self._think_state = "after"
            return
        keep = _partial_suffix(held, _THINK_CLOSE)
        self._emit_reasoning(held[: len(held) - keep], out)
        self._held = held[len(held) - keep :]

    def _flush_held(self, out: list[Chunk]) -> None:
        held, self._held = self._held, ""
        if not held:
            return
        if self._think_state == "think":
            self._emit_reasoning(held, out)
        else:
            self._emit_text(held, out)

    # --- the end ----------------------------------------------------------------------------

    def finish(self) -> list[Chunk]:
        """The stream ended normally: emit held text, complete calls (by index), usage, done."""
        out: list[Chunk] = []
        self._flush_held(out)
        calls = self.tool_calls()
        reason = _FINISH.get(self.finish_reason or "stop", "stop")
        if calls and reason == "stop":
            reason = "tool_calls"  # some local servers report "stop" for a call
        out.extend(stream_end(calls, self.usage, reason))
        return out

    def tool_calls(self) -> list[ToolCall]:
        calls = []
        for idx in sorted(self._calls):
            c = self._calls[idx]
            if not c.name:
                continue  # fragments of a call whose name never came cannot be run
            args = "".join(c.arguments)
            calls.append(ToolCall(c.id or f"call_{idx}", c.name, args if args.strip() else "{}"))
        return calls


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag``."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def _stream_error(err: Any) -> APIError:
    if isinstance(err, Mapping):
        message = str(err.get("message") or err.get("error") or err)
        code = err.get("code") or err.get("type")
        status = err.get("status_code") or err.get("status")
        text = f"provider error in stream: {message}" + (f" ({code})" if code else "")
        import json

        body = json.dumps(dict(err), ensure_ascii=False)[:4096]
        return APIError(text, status=status if isinstance(status, int) else None, body=body)
    return APIError(f"provider error in stream: {err}", body=str(err)[:4096])
