"""The B1r baseline: resume to ready in plain Python with `orjson` and Hugging Face `tokenizers`.

What a competent user writes without foldlog: load and derive the history (`pyload.load`, the B1
baseline, with orjson), render each message with DeepSeek's chat layout and count it with
`tokenizers` (`encode_batch` on the same `tokenizer.json`, in parallel), plan the compaction
(pinned system prefix, a recent tail under a token budget that never opens on a tool result,
everything between folded), and serialise the first request body with orjson.

The layout is the one foldlog documents for DeepSeek V4 (`docs/tokens.md`, DeepSeek V3.1's
template): the same text is counted on both sides, so the counts must be equal.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from pyload import load as py_load

USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
EOS = "<｜end▁of▁sentence｜>"
THINK = "<think>"
END_THINK = "</think>"
CALLS_BEGIN = "<｜tool▁calls▁begin｜>"
CALLS_END = "<｜tool▁calls▁end｜>"
CALL_BEGIN = "<｜tool▁call▁begin｜>"
CALL_END = "<｜tool▁call▁end｜>"
SEP = "<｜tool▁sep｜>"
OUTPUT_BEGIN = "<｜tool▁output▁begin｜>"
OUTPUT_END = "<｜tool▁output▁end｜>"
# DeepSeek's served template frames an assistant message with tool calls more verbosely than
# the public layout shows (docs/tokens.md: fitted on recorded requests)
UNSEEN_CALL_TOKENS = 27


def _content(m: dict[str, Any]) -> str:
    c = m.get("content")
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    return "".join(str(b.get("text", "")) for b in c if isinstance(b, dict))


def render(m: dict[str, Any]) -> str:
    """One message as DeepSeek's chat template lays it out."""
    role = m["role"]
    text = _content(m)
    if role == "user":
        return USER + text
    if role == "tool":
        return OUTPUT_BEGIN + text + OUTPUT_END
    if role == "assistant":
        out = [ASSISTANT]
        reasoning = m.get("reasoning_content")
        if reasoning:
            out += [THINK, reasoning]
        out += [END_THINK, text]
        calls = m.get("tool_calls") or []
        if calls:
            out.append(CALLS_BEGIN)
            for c in calls:
                fn = c["function"]
                out += [CALL_BEGIN, fn["name"], SEP, fn.get("arguments") or "", CALL_END]
            out.append(CALLS_END)
        out.append(EOS)
        return "".join(out)
    return text  # system / developer: the prompt text right after the start token


def count_messages(hf: Any, messages: Sequence[dict[str, Any]]) -> list[int]:
    encodings = hf.encode_batch([render(m) for m in messages], add_special_tokens=False)
    return [
        len(e.ids) + (UNSEEN_CALL_TOKENS if m.get("tool_calls") else 0)
        for e, m in zip(encodings, messages, strict=True)
    ]


@dataclass(frozen=True)
class Plan:
    head: int
    tail_start: int
    tokens_before: int
    fold_tokens: int


def plan(messages: Sequence[dict[str, Any]], counts: Sequence[int], tail_tokens: int, keep: int) -> Plan:
    """Pinned system prefix; a tail walked back from the newest message while it fits
    ``tail_tokens`` (at least ``keep`` messages), moved back so that it opens on no tool result
    (a result's call sits right before its results in a well-formed history); the rest folds."""
    head = 0
    while head < len(messages) and messages[head]["role"] in ("system", "developer"):
        head += 1
    start = len(messages)
    acc = 0
    while start > head:
        t = counts[start - 1]
        if len(messages) - start >= keep and acc + t > tail_tokens:
            break
        acc += t
        start -= 1
    while start > head and messages[start]["role"] == "tool":
        start -= 1
    return Plan(head, start, sum(counts), sum(counts[head:start]))


def wire(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages as sent: each call's results right after it in the order of the calls (the
    order the chat-completions APIs pair them in; the recorded order may differ)."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(messages):
        m = messages[i]
        out.append(m)
        i += 1
        calls = m.get("tool_calls")
        if m["role"] != "assistant" or not calls:
            continue
        j = i
        while j < len(messages) and messages[j]["role"] == "tool":
            j += 1
        order = {c["id"]: k for k, c in enumerate(calls)}
        out += sorted(messages[i:j], key=lambda r: order.get(r.get("tool_call_id"), len(order)))
        i = j
    return out


def resume(path: str, hf: Any, tail_tokens: int, keep: int) -> tuple[list[int], Plan, bytes]:
    """Load, count every message, plan, build the request's message array."""
    messages, _repairs = py_load(path, orjson.loads, lambda v: orjson.dumps(v).decode())
    counts = count_messages(hf, messages)
    return counts, plan(messages, counts, tail_tokens, keep), orjson.dumps(wire(messages))
