"""Claude Code session JSONL → foldlog events.

One API response is written over several lines (one content block each) sharing ``message.id``,
and the results of its tool calls can sit between those lines. We therefore gather a response
with the results that follow it and write it out when something else begins: the assistant
message with every call, its ``tool/call`` events, then the results in the order they came.
``compact_boundary`` + the ``isCompactSummary`` user record become a foldlog compaction; so does
an ``isCompactSummary`` prompt that starts a new root (Claude Code 1.0.x wrote no boundary), and
any other prompt that starts a new root later in the file (plan mode's "Implement the following
plan:") starts the model's context over: a reset in the same log.
Images and documents (pasted into a prompt, returned by a tool such as Read on a PNG or PDF)
are kept as blocks; a block the log has no form for is named in the import report.
``progress``, snapshots, queue operations and titles are not model history and are skipped; a
record or reply block of a kind this importer does not know is named, with its count, in the
conversation's ``left_out`` (a server tool's ``*_tool_result`` block is the result of its call).

The file is a tree (:mod:`foldlog.interchange.importers.claude_tree`): the conversation is the thread
the session ended on. Sub-agent runs — inline ``isSidechain`` records, or ``agent-*.jsonl``
files beside the session (``<session>/subagents/`` or the session's folder) — become child
conversations linked to the ``Task`` call they answer (the call's result stays in the parent);
abandoned branches are reported in ``left_out``, or become fork children with
``branches="all"``. Every event keeps the time of the record it came from.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder, media_blocks
from foldlog.interchange.importers.claude_tree import Record, is_new_root, split, tool_use_ids
from foldlog.interchange.source import expect, iso_ms, iter_jsonl, need_dict
from foldlog.log.text import display_text

FORMAT = "claude-code"
HAS_BRANCHES = True  # convert() takes branches=


@dataclass(slots=True)
class _Reply:
    key: str
    line: int
    time: int | None
    blocks: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    model: str | None = None
    stop_reason: str | None = None
    results: list[tuple[int, int | None, dict[str, Any]]] = field(default_factory=list)


def usage_from_anthropic(usage: Any) -> dict[str, int] | None:
    """Anthropic usage → foldlog usage (prompt = uncached + cache writes + cache reads)."""
    if not isinstance(usage, dict):
        return None
    fresh = int(usage.get("input_tokens") or 0)
    written = int(usage.get("cache_creation_input_tokens") or 0)
    read = int(usage.get("cache_read_input_tokens") or 0)
    out = {
        "promptTokens": fresh + written + read,
        "completionTokens": int(usage.get("output_tokens") or 0),
        "cacheHitTokens": read,
        "cacheMissTokens": fresh + written,
        "reasoningTokens": 0,
    }
    if written:
        out["cacheWriteTokens"] = written  # priced apart (foldlog.cost)
    return out


def _flush(b: EventBuilder, reply: _Reply | None) -> None:
    if reply is None:
        return
    b.line, b.time = reply.line, reply.time
    texts: list[str] = []
    thinking: list[str] = []
    calls: list[tuple[str | None, str, str]] = []
    served: list[dict[str, Any]] = []  # results the server wrote into the reply itself
    for block in reply.blocks:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if block["text"].strip():
                texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif kind in ("tool_use", "server_tool_use"):
            args = block.get("input", {})
            calls.append(
                (block.get("id"), str(block.get("name") or ""), json.dumps(args, ensure_ascii=False))
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result") and block.get("tool_use_id"):
            # a server tool's result (web_search_tool_result, …): the result of its call
            served.append(block)
        elif kind in _NOT_CARRIED:
            b.leave_out(f"{kind!r} reply block(s): {_NOT_CARRIED[kind]}")
        else:
            b.leave_out(f"{kind!r} reply block(s): a kind of block this importer does not know")
    extra: dict[str, Any] = {}
    if reply.model:
        extra["model"] = reply.model
    b.assistant(
        "\n\n".join(texts),
        reasoning="\n\n".join(thinking) or None,
        tool_calls=calls,
        usage=usage_from_anthropic(reply.usage),
        extra=extra,
    )
    for block in served:
        content = block.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        b.tool_result(block["tool_use_id"], text, is_error=_is_error_result(content))
    for line, time, block in reply.results:
        b.line, b.time = line, time
        b.tool_result(
            block.get("tool_use_id"),
            b.content(block.get("content")),
            is_error=bool(block.get("is_error")),
        )


def _is_error_result(content: Any) -> bool:
    return isinstance(content, dict) and str(content.get("type", "")).endswith("_error")


#: reply blocks foldlog has no form for, and why (each is named in the import's "left out")
_NOT_CARRIED = {
    "redacted_thinking": "encrypted reasoning, readable only by the provider",
}

#: records that are not model history: skipped (every other kind is named in "left out")
_NOT_HISTORY = frozenset({"progress", "file-history-snapshot", "queue-operation", "summary", "custom-title"})


def unknown_records(records: list[Record]) -> list[str]:
    """One "left out" line per record type of a file this importer does not know, with its
    count (counted over the whole file: such a record is in no thread)."""
    kinds = Counter(
        str(rec.get("type"))
        for _, rec in records
        if rec.get("type") not in ("user", "assistant", "system") and rec.get("type") not in _NOT_HISTORY
    )
    return [
        f"{n} {kind!r} record(s): a kind of record this importer does not know" for kind, n in kinds.items()
    ]


def check_records(records: list[Record], path: str | Path) -> None:
    """What every record must hold, checked over the whole file (branches included)."""
    for number, rec in records:
        kind = rec.get("type")
        expect(isinstance(kind, str), 'record without a "type"', path, number)
        if kind in ("user", "assistant"):
            message = need_dict(
                rec.get("message"), f'"{kind}" record without a "message" object', path, number
            )
            expect(
                isinstance(message.get("content"), list | str),
                f"{kind} message content is not a list or string",
                path,
                number,
            )


def convert_records(records: list[Record], path: str | Path) -> Conversation:
    """One thread's records (in file order) as a conversation; no tree is looked at here."""
    b = EventBuilder()
    reply: _Reply | None = None
    boundary: dict[str, Any] | None = None
    meta: dict[str, Any] = {"format": FORMAT, "source": Path(path).name}
    session_id: str | None = None
    for number, rec in records:
        kind = rec.get("type")
        if kind not in ("user", "assistant", "system"):
            continue  # not history (progress, snapshots, titles); unknown kinds: `unknown_records`
        time = iso_ms(rec.get("timestamp"))
        if kind == "system":
            if rec.get("subtype") == "compact_boundary":
                _flush(b, reply)
                reply = None
                boundary = rec.get("compactMetadata") or {}
            continue
        message = rec["message"]
        session_id = session_id or rec.get("sessionId")
        for key in ("cwd", "gitBranch", "version"):
            if key in rec and key not in meta:
                meta[key] = rec[key]
        content = message.get("content")
        if kind == "assistant":
            key = str(message.get("id") or rec.get("uuid") or number)
            if reply is None or reply.key != key:
                _flush(b, reply)
                reply = _Reply(key, number, time)
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            reply.blocks.extend(x for x in blocks if isinstance(x, dict))
            reply.usage = message.get("usage") or reply.usage
            reply.model = message.get("model") or reply.model
            meta.setdefault("model", reply.model)
            continue
        # a user record: tool results, a compaction summary, or a prompt (typed or injected)
        if isinstance(content, list) and any(
            isinstance(x, dict) and x.get("type") == "tool_result" for x in content
        ):
            rest = [x for x in content if not (isinstance(x, dict) and x.get("type") == "tool_result")]
            results = [
                (number, time, x) for x in content if isinstance(x, dict) and x.get("type") == "tool_result"
            ]
            if reply is not None:
                reply.results.extend(results)
            else:
                for line, at, block in results:
                    b.line, b.time = line, at
                    b.tool_result(
                        block.get("tool_use_id"),
                        b.content(block.get("content")),
                        is_error=bool(block.get("is_error")),
                    )
            if not rest:
                continue
            content = rest
        _flush(b, reply)
        reply = None
        b.line, b.time = number, time
        if rec.get("isCompactSummary"):
            info = boundary or {}
            pre = info.get("preTokens")
            b.compaction(
                display_text(content),
                trigger=str(info.get("trigger") or "auto"),
                tokens_before=pre if isinstance(pre, int) else None,
                source=FORMAT,
            )
            boundary = None
            continue
        media = media_blocks(content, b.warn)
        prompt = media if media is not None else content
        source = "meta" if rec.get("isMeta") else None
        if is_new_root(rec) and b.counts.messages:
            b.restart(prompt, source=source)  # a new root later in the file: the context starts over
        else:
            b.user(prompt, source=source)
    _flush(b, reply)
    return b.conversation(id=session_id, meta=meta)


def convert(path: str | Path, *, branches: str = "current") -> list[Conversation]:
    """The session in ``path`` (with its sub-agents and, with ``branches="all"``, its abandoned
    branches as children); see the module docstring."""
    from foldlog.interchange.importers.claude_children import add_forks, add_subagents

    records = list(iter_jsonl(path, "Claude Code transcripts"))
    check_records(records, path)
    parts = split(records)
    main = convert_records(parts.main.records, path)
    main.left_out.extend(unknown_records(records))
    add_forks(main, parts.main, path, branches)
    if parts.unlinked:
        main.left_out.append(
            f"{parts.unlinked} message(s) on no thread: under another root than the session's"
        )
    add_subagents(main, records, parts, path, branches)
    return [main]


def task_calls(records: list[Record]) -> dict[str, str]:
    """``Task`` / ``Agent`` call id by the prompt it gave the sub-agent."""
    out: dict[str, str] = {}
    for _, rec in records:
        if rec.get("type") == "assistant":
            for cid, name, args in tool_use_ids(rec):
                if (
                    name in ("Task", "Agent")
                    and isinstance(args, dict)
                    and isinstance(args.get("prompt"), str)
                ):
                    out.setdefault(args["prompt"], cid)
    return out


__all__ = [
    "FORMAT",
    "check_records",
    "convert",
    "convert_records",
    "task_calls",
    "unknown_records",
    "usage_from_anthropic",
]
