"""foldlog session → Claude Code session JSONL (what ``claude`` writes under ``~/.claude/projects``).

Each message is one record, chained by ``uuid`` / ``parentUuid`` on the main thread
(``isSidechain: false``), with the event's time as ``timestamp``:

- a user message → a ``user`` record (``isMeta`` for injected context, ``source: "meta"``);
- a reply → an ``assistant`` record whose content is its ``thinking``, ``text`` and ``tool_use``
  blocks, with its usage in Anthropic's fields (prompt = ``input_tokens`` (the cache misses) +
  ``cache_read_input_tokens``);
- a tool result → a ``user`` record holding one ``tool_result`` block (images kept as blocks);
- a compaction → a ``compact_boundary`` system record (``parentUuid: null``,
  ``logicalParentUuid`` the record before) and the summary as an ``isCompactSummary`` user record;
- a sub-agent's session (a child whose header names this session and the call it answers) →
  its own file ``subagents/agent-<child id>.jsonl`` of ``isSidechain: true`` records, and the
  parent's ``tool_result`` record names it (``toolUseResult.agentId``), as Claude Code does.

A context reset (``Session.replace``, an imported new root) starts a new root: the next record
has ``parentUuid: null`` and no ``logicalParentUuid``, as plan mode writes one. Blocks are
Anthropic's (``content_block`` of the Anthropic provider: an ``image_url`` becomes an
``image``, a ``file`` a ``document``).

Not carried: system messages (Claude Code transcripts do not hold the system prompt: named in
the warnings), audio blocks (their names in text, warned), messages a reset kept (warned), the
text formatting of tool-call arguments (Claude Code keeps them as an object), turn end reasons.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from foldlog.interchange.exports.blocks import Uncarried, where
from foldlog.interchange.exports.walk import (
    Compaction,
    Record,
    Reply,
    Reset,
    Result,
    System,
    TurnEnd,
    User,
    history,
)
from foldlog.log.frozen import thaw
from foldlog.providers.anthropic.body import content_block

if TYPE_CHECKING:
    from foldlog.log.session import Session

FORMAT = "claude-code"
_NS = uuid.UUID("6f1d0c52-5a3e-4f43-9d59-0c1f7a8e2b11")


def iso_time(ms: int) -> str:
    """Epoch milliseconds as the ISO 8601 UTC time Claude Code and Codex write."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def anthropic_usage(usage: Mapping[str, Any] | None) -> dict[str, int] | None:
    """foldlog usage → Anthropic's fields (the inverse of the importer's reading)."""
    if not usage:
        return None
    prompt = int(usage.get("promptTokens") or 0)
    hit = int(usage.get("cacheHitTokens") or 0)
    return {
        "input_tokens": max(prompt - hit, 0),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": hit,
        "output_tokens": int(usage.get("completionTokens") or 0),
    }


def tool_input(arguments: str, warn: list[str]) -> dict[str, Any]:
    """A call's raw JSON arguments as the object Claude Code keeps (``{}`` for none)."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    warn.append("tool-call arguments that are not a JSON object were kept under an 'arguments' key")
    return {"arguments": arguments}


def _block(block: Mapping[str, Any], at: str, index: int, notes: Uncarried) -> dict[str, Any]:
    """One block as Claude Code keeps it: Anthropic's, as the Anthropic provider sends it
    (an ``image_url`` becomes an ``image``, a ``file`` a ``document``); audio, which Anthropic
    has no block for, becomes its name in text, warned in ``notes``."""
    kind = block.get("type")
    if kind in ("image_url", "file"):
        converted = content_block(block)
        if converted.get("type") in ("image", "document"):
            return converted
    if kind in ("input_audio", "file"):
        return notes.text_for(at, index, block, f"Claude Code (Anthropic's API) has no {kind} block")
    return {str(k): v for k, v in thaw(dict(block)).items()}


def content_blocks(content: Any, at: str = "a message", notes: Uncarried | None = None) -> Any:
    """Message content as Claude Code writes it: a string, or Anthropic blocks."""
    if isinstance(content, list):
        notes = notes if notes is not None else Uncarried("Claude Code")
        return [_block(b, at, i, notes) if isinstance(b, Mapping) else b for i, b in enumerate(content)]
    return content if content is not None else ""


class _Writer:
    def __init__(self, session_id: str, *, sidechain: bool, agent_id: str | None, key: str) -> None:
        self.session_id = session_id
        self.sidechain = sidechain
        self.agent_id = agent_id
        self.key = key
        self.lines: list[str] = []
        self.parent: str | None = None
        self.count = 0
        self.warnings: list[str] = []
        self.notes = Uncarried("Claude Code")
        #: the next message starts a root of its own (the context started over: a reset)
        self.new_root = False

    def _uuid(self) -> str:
        self.count += 1
        return str(uuid.uuid5(_NS, f"{self.key}/{self.count}"))

    def record(self, kind: str, time: int, body: Mapping[str, Any], *, chain: bool = True) -> str:
        root, self.new_root = self.new_root, False
        rec: dict[str, Any] = {
            "parentUuid": self.parent if chain and not root else None,
            "isSidechain": self.sidechain,
            "userType": "external",
            "sessionId": self.session_id,
        }
        if self.agent_id is not None:
            rec["agentId"] = self.agent_id
        rec["type"] = kind
        rec.update(body)
        rec["uuid"] = self._uuid()
        rec["timestamp"] = iso_time(time)
        if not chain and not root:
            rec["logicalParentUuid"] = self.parent
        self.parent = rec["uuid"]
        self.lines.append(json.dumps(rec, ensure_ascii=False))
        return str(rec["uuid"])

    def reply(self, r: Reply) -> None:
        blocks: list[dict[str, Any]] = []
        if r.reasoning:
            blocks.append({"type": "thinking", "thinking": r.reasoning, "signature": ""})
        text = r.content if isinstance(r.content, str) else self._reply_text(r)
        if text:
            blocks.append({"type": "text", "text": text})
        for call in r.calls:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": tool_input(call.arguments, self.warnings),
                }
            )
        message: dict[str, Any] = {
            "id": "msg_" + uuid.uuid5(_NS, f"{self.key}/reply/{r.seq}").hex[:24],
            "type": "message",
            "role": "assistant",
            "model": r.model or "<synthetic>",
            "content": blocks,
            "stop_reason": "tool_use" if r.calls else "end_turn",
        }
        usage = anthropic_usage(r.usage)
        if usage is not None:
            message["usage"] = usage
        self.record("assistant", r.time, {"message": message})

    def _reply_text(self, r: Reply) -> str:
        """A reply's content blocks as its text: media (which a Claude Code reply cannot hold)
        named in it and warned."""
        pieces = [
            self.notes.text_for(
                where(r), i, b, "a Claude Code reply holds text, thinking and tool calls only"
            )["text"]
            if isinstance(b, Mapping) and b.get("type") not in (None, "text")
            else _text([b])
            for i, b in enumerate(r.content or [])
        ]
        return "\n".join(p for p in pieces if p)

    def result(self, r: Result, agent: str | None) -> None:
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": r.call_id,
            "content": content_blocks(r.content, where(r), self.notes),
        }
        if r.is_error:
            block["is_error"] = True
        body: dict[str, Any] = {"message": {"role": "user", "content": [block]}}
        if agent is not None:
            body["toolUseResult"] = {"status": "completed", "agentId": agent}
        self.record("user", r.time, body)

    def write(self, records: Sequence[Record], children: Mapping[str, str]) -> None:
        systems = 0
        for rec in records:
            if isinstance(rec, System):
                systems += 1
            elif isinstance(rec, User):
                blocks = content_blocks(rec.content, where(rec), self.notes)
                body: dict[str, Any] = {"message": {"role": "user", "content": blocks}}
                if rec.source == "meta":
                    body["isMeta"] = True
                self.record("user", rec.time, body)
            elif isinstance(rec, Reply):
                self.reply(rec)
            elif isinstance(rec, Result):
                self.result(rec, children.get(rec.call_id))
            elif isinstance(rec, Compaction):
                meta: dict[str, Any] = {"trigger": rec.trigger}
                if rec.tokens_before is not None:
                    meta["preTokens"] = rec.tokens_before
                boundary = {
                    "subtype": "compact_boundary",
                    "content": "Conversation compacted",
                    "isMeta": False,
                    "level": "info",
                    "compactMetadata": meta,
                }
                self.record("system", rec.time, boundary, chain=False)
                summary = {"role": "user", "content": rec.summary}
                self.record("user", rec.time, {"message": summary, "isCompactSummary": True})
            elif isinstance(rec, Reset):
                # Claude Code starts the context over at a new root (parentUuid null, nothing
                # named as what it continues), as plan mode's "Implement the following plan" does
                self.new_root = True
                if rec.kept:
                    self.warnings.append(
                        f"the surface reset at #{rec.seq} kept {rec.kept} message(s): a new root "
                        "keeps none, so they are not in the context after it"
                    )
            elif isinstance(rec, TurnEnd):
                continue
        self.warnings += self.notes.warnings
        if systems:
            self.warnings.append(
                f"{systems} system message(s) left out: Claude Code transcripts do not hold the system prompt"
            )


def _text(content: Any) -> str:
    from foldlog.log.text import display_text

    return display_text(content)


def subagent_call(child: Session) -> str | None:
    """The call a sub-agent's session answers (its header's ``parent.callId``), or None."""
    parent = child.parent
    if parent is None or parent.get("kind") != "subagent" or not isinstance(parent.get("callId"), str):
        return None
    return str(parent["callId"])


def export(session: Session, children: Sequence[Session] = ()) -> tuple[str, dict[str, str], list[str]]:
    """The Claude Code transcript of ``session``: (main file text, sub-agent files by relative
    path, warnings)."""
    walk = history(session)
    by_call: dict[str, Session] = {}
    for child in children:
        call = subagent_call(child)
        if call is not None:
            by_call[call] = child
    agents = {call: child.id for call, child in by_call.items()}
    main = _Writer(session.id, sidechain=False, agent_id=None, key=session.id)
    main.write(walk.records, agents)
    warnings = [*walk.warnings, *dict.fromkeys(main.warnings)]
    files: dict[str, str] = {}
    for call, child in by_call.items():
        sub = _Writer(session.id, sidechain=True, agent_id=child.id, key=f"{session.id}/{child.id}")
        sub.write(history(child).records, {})
        files[f"subagents/agent-{child.id}.jsonl"] = "\n".join(sub.lines) + "\n" if sub.lines else ""
        warnings += [f"sub-agent {child.id} (call {call}): {w}" for w in dict.fromkeys(sub.warnings)]
    text = "\n".join(main.lines) + "\n" if main.lines else ""
    return text, files, warnings
