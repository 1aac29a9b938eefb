"""OpenAI chat ``messages`` arrays → foldlog events.

Accepted documents: a bare ``messages`` array; an object with ``messages``; an array of such
records where each holds its array under ``traj`` or ``messages`` (τ-bench: one conversation
per task). Also used by the SWE-agent converter, whose ``history`` is nearly this shape.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder, media_blocks
from foldlog.interchange.source import expect, load_json, need_list
from foldlog.log.text import display_text

FORMAT = "openai"


def usage_from_openai(usage: Any) -> dict[str, int] | None:
    """Chat-completions usage (OpenAI or DeepSeek field names) → foldlog usage."""
    if not isinstance(usage, Mapping):
        return None
    prompt = int(usage.get("prompt_tokens") or 0)
    details = usage.get("prompt_tokens_details") or {}
    hit = usage.get("prompt_cache_hit_tokens")
    if hit is None and isinstance(details, Mapping):
        hit = details.get("cached_tokens")
    hit = int(hit or 0)
    reasoning = usage.get("completion_tokens_details") or {}
    return {
        "promptTokens": prompt,
        "completionTokens": int(usage.get("completion_tokens") or 0),
        "cacheHitTokens": hit,
        "cacheMissTokens": max(prompt - hit, 0),
        "reasoningTokens": int(reasoning.get("reasoning_tokens") or 0)
        if isinstance(reasoning, Mapping)
        else 0,
    }


def parse_tool_calls(raw: Any, path: str | Path, line: int | None) -> list[tuple[str | None, str, str]]:
    """``tool_calls`` (OpenAI shape, or a Python-literal string as SWE-agent stores it) → tuples."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        import ast

        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            expect(False, "tool_calls is a string that is not a list", path, line)
    expect(isinstance(raw, list), "tool_calls is not a list", path, line)
    calls: list[tuple[str | None, str, str]] = []
    for call in raw:
        expect(isinstance(call, Mapping), "a tool call is not an object", path, line)
        fn = call.get("function") if isinstance(call.get("function"), Mapping) else call
        name = fn.get("name")
        expect(isinstance(name, str), "a tool call has no function name", path, line)
        args = fn.get("arguments", "")
        calls.append((call.get("id"), name, args if isinstance(args, str) else json.dumps(args)))
    return calls


def add_messages(
    b: EventBuilder,
    messages: Iterable[Any],
    path: str | Path,
    *,
    first_line: int | None = None,
    observations: bool = False,
) -> None:
    """Feed chat messages to the builder; ``b.line`` is the message index (1-based).

    ``observations``: user messages after the first reply are environment output (text-mode
    agents), so they join the running turn instead of opening a new one.
    """
    replied = False
    for index, msg in enumerate(messages, start=1):
        where = index if first_line is None else first_line
        b.line = where
        expect(isinstance(msg, Mapping), f"message {index} is not an object", path, where)
        role = msg.get("role")
        content = msg.get("content")
        if role == "system" or role == "developer":
            b.system(display_text(content))
        elif role == "user":
            media = media_blocks(content, b.warn)
            if media is not None:
                content = media
            if observations and replied:
                b.user(content if content is not None else "", source="observation", new_turn=False)
            else:
                b.user(content if content is not None else "")
        elif role == "assistant":
            replied = True
            calls = parse_tool_calls(msg.get("tool_calls"), path, where)
            legacy = msg.get("function_call")  # the pre-tools form: one call, answered by "function"
            if isinstance(legacy, Mapping):
                calls += parse_tool_calls([legacy], path, where)
            text = display_text(content)
            refusal = msg.get("refusal")
            if isinstance(refusal, str) and refusal and refusal not in text:
                text = f"{text}\n\n{refusal}" if text else refusal  # what the model said instead
            audio = msg.get("audio")
            if not text and isinstance(audio, Mapping) and isinstance(audio.get("transcript"), str):
                text = audio["transcript"]  # a spoken reply: its transcript is what it said
            b.assistant(
                text,
                reasoning=msg.get("reasoning_content") or None,
                tool_calls=calls,
                usage=usage_from_openai(msg.get("usage")),
            )
        elif role in ("tool", "function"):
            ids = msg.get("tool_call_ids")
            if isinstance(ids, str):
                import ast

                try:
                    ids = ast.literal_eval(ids)
                except (ValueError, SyntaxError):
                    ids = [ids]
            if not isinstance(ids, list) or not ids:
                ids = [msg.get("tool_call_id")]
            for call_id in ids:
                b.tool_result(call_id, b.content(content), name=msg.get("name"))
        else:
            expect(False, f"message {index} has unknown role {role!r}", path, where)


def _conversations(doc: Any, path: str | Path) -> list[tuple[str | None, list[Any], dict[str, Any]]]:
    if isinstance(doc, Mapping):
        expect(isinstance(doc.get("messages"), list), 'object without a "messages" array', path, None)
        return [(doc.get("id"), doc["messages"], {})]
    expect(isinstance(doc, list), "expected a JSON array of messages or of records", path, None)
    if all(isinstance(x, Mapping) and "role" in x for x in doc):
        return [(None, doc, {})]
    out: list[tuple[str | None, list[Any], dict[str, Any]]] = []
    for index, rec in enumerate(doc):
        rec = rec if isinstance(rec, Mapping) else {}
        msgs = need_list(
            rec.get("traj", rec.get("messages")),
            f'record {index} has no "traj" or "messages" array',
            path,
            None,
        )
        extra = {k: rec[k] for k in ("task_id", "trial", "reward") if k in rec}
        task = rec.get("task_id", index)
        ident = f"{Path(path).stem}-{task}" + (f"-{rec['trial']}" if "trial" in rec else "")
        out.append((ident, msgs, extra))
    return out


def convert(path: str | Path) -> list[Conversation]:
    doc = load_json(path)
    result: list[Conversation] = []
    for ident, messages, extra in _conversations(doc, path):
        b = EventBuilder()
        add_messages(b, messages, path)
        result.append(b.conversation(id=ident, meta={"format": FORMAT, "source": Path(path).name, **extra}))
    return result
