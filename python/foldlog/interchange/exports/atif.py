"""foldlog session → ATIF-v1.7 trajectory (Agent Trajectory Interchange Format, ../shared/spec/atif.md).

One step per record of the history (`export_walk.history`), numbered from 1:

- a system message → a ``system`` step; a user message → a ``user`` step (content parts for
  images: ATIF references images by path or URL, so an inline image is written as a ``data:``
  URL, its ``media_type`` that of the data URL, the block's ``source`` or the link; an image of
  another type than ATIF's four, audio, files and documents are their names in text, warned);
- a reply → an ``agent`` step: its text, ``reasoning_content``, ``tool_calls`` (arguments
  parsed to an object), ``metrics`` (prompt tokens including cached ones, ``cached_tokens``,
  reasoning tokens in ``metrics.extra``, ``cost_usd`` from `foldlog.cost`'s ledger: the recorded
  cost, else the request priced), ``llm_call_count: 1``, and in ``observation`` the
  results of its calls that follow it (paired by ``source_call_id``; the error flag in the
  result's ``extra``);
- a result whose call is not in the step before it → a ``system`` step whose observation names
  the call in ``extra`` (ATIF pairs results only within a step);
- a compaction → a ``system`` step with the summary (``extra.foldlog.compaction``), followed by
  the messages the fold kept (those it kept before its digest as ``is_copied_context`` copies,
  a reply's copy with ``llm_call_count: 0`` and no metrics);
- a sub-agent's session → an embedded trajectory (``subagent_trajectories``) referenced from the
  result of the call it answers (``subagent_trajectory_ref``).

``final_metrics`` sums the steps' tokens (sub-agents included, split in its ``extra``) and, when
every request is priced in USD, ``total_cost_usd``. Every
document is checked against the closed schema (`atif_schema.check_atif`) before it is returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from foldlog.cost.ledger import session_ledger
from foldlog.cost.prices import Cost
from foldlog.errors import ExportError
from foldlog.interchange.exports.atif_schema import IMAGE_TYPES, check_atif
from foldlog.interchange.exports.blocks import Uncarried, block_url, media_type, where
from foldlog.interchange.exports.claude_code import iso_time, subagent_call
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
from foldlog.log.text import display_text

if TYPE_CHECKING:
    from foldlog.log.session import Session

FORMAT = "atif"
VERSION = "ATIF-v1.7"


def _part(block: Any, at: str, index: int, notes: Uncarried) -> dict[str, Any]:
    """One content block as an ATIF content part: text, an image of a type ATIF allows (its
    media type from the data URL, the block's ``source`` or the link's extension), else the
    block's name in text with a warning."""
    if not isinstance(block, Mapping):
        return {"type": "text", "text": display_text([block])}
    kind = block.get("type")
    if kind == "text" or (isinstance(block.get("text"), str) and kind not in _MEDIA):
        return {"type": "text", "text": display_text([block])}
    url = block_url(block)
    if kind in ("image", "image_url") and url:
        media = media_type(block)
        if media in IMAGE_TYPES:
            return {"type": "image", "source": {"media_type": media, "path": url}}
        why = (
            f"ATIF images must be {', '.join(IMAGE_TYPES)}"
            if media
            else f"its media type cannot be told (ATIF images must be {', '.join(IMAGE_TYPES)})"
        )
        return notes.text_for(at, index, block, why)
    return notes.text_for(at, index, block, f"ATIF-v1.7 has no {kind} content (text and images only)")


#: block types that hold media (a text field beside them is not their content)
_MEDIA = frozenset({"image", "image_url", "input_audio", "file", "document", "input_image"})


def content(value: Any, at: str = "a message", notes: Uncarried | None = None) -> str | list[dict[str, Any]]:
    """Message content as ATIF: a string, or text and image parts when it holds media (a block
    ATIF cannot carry becomes its name in text, warned in ``notes``)."""
    if not isinstance(value, list):
        return display_text(value)
    if not any(isinstance(b, Mapping) and b.get("type") in _MEDIA for b in value):
        return display_text(value)
    notes = notes if notes is not None else Uncarried("ATIF")
    parts = [_part(block, at, i, notes) for i, block in enumerate(value)]
    return parts if any(p["type"] == "image" for p in parts) else "\n".join(p["text"] for p in parts)


def _arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"arguments": raw}


class _Steps:
    def __init__(self, children: Mapping[str, str], costs: Mapping[int, Cost | None]) -> None:
        self.steps: list[dict[str, Any]] = []
        self.children = children
        #: each request's cost by its reply's seq (`foldlog.cost`: recorded, else priced)
        self.costs = costs
        self.open_calls: set[str] = set()
        self.prompt = self.completion = self.cached = 0
        self.notes = Uncarried("ATIF")

    def add(self, step: dict[str, Any]) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, **step}
        self.steps.append(step)
        return step

    def result(self, r: Result) -> None:
        entry: dict[str, Any] = {
            "content": content(r.content, where(r), self.notes),
            "extra": {"is_error": r.is_error},
        }
        child = self.children.get(r.call_id)
        if child is not None:
            entry["subagent_trajectory_ref"] = [{"trajectory_id": child}]
        last = self.steps[-1] if self.steps else None
        if last is not None and r.call_id in self.open_calls:
            entry = {"source_call_id": r.call_id, **entry}
            last.setdefault("observation", {"results": []})["results"].append(entry)
            self.open_calls.discard(r.call_id)
            return
        entry["extra"]["tool_call_id"] = r.call_id
        entry["extra"]["tool_name"] = r.name
        step: dict[str, Any] = {
            "timestamp": iso_time(r.time),
            "source": "system",
            "message": "",
            "observation": {"results": [entry]},
        }
        if r.copy:
            step["is_copied_context"] = True
        self.add(step)

    def reply(self, r: Reply) -> None:
        step: dict[str, Any] = {"timestamp": iso_time(r.time), "source": "agent"}
        if r.model:
            step["model_name"] = r.model
        step["message"] = content(r.content, where(r), self.notes)
        if r.reasoning:
            step["reasoning_content"] = r.reasoning
        if r.calls:
            step["tool_calls"] = [
                {"tool_call_id": c.id, "function_name": c.name, "arguments": _arguments(c.arguments)}
                for c in r.calls
            ]
        if r.usage:
            prompt = int(r.usage.get("promptTokens") or 0)
            completion = int(r.usage.get("completionTokens") or 0)
            cached = int(r.usage.get("cacheHitTokens") or 0)
            metrics: dict[str, Any] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "cached_tokens": cached,
            }
            extra: dict[str, Any] = {}
            if r.usage.get("reasoningTokens"):
                extra["reasoning_tokens"] = int(r.usage["reasoningTokens"])
            cost = self.costs.get(r.seq)
            if cost is not None and cost.currency == "USD":
                metrics["cost_usd"] = cost.total
            if cost is not None:
                extra["cost"] = {"currency": cost.currency, "source": cost.source}
                if cost.currency != "USD":
                    extra["cost"]["total"] = cost.total
            if extra:
                metrics["extra"] = extra
            step["metrics"] = metrics
            self.prompt += prompt
            self.completion += completion
            self.cached += cached
        if r.copy:  # a reply a fold kept, written again after its summary: not another request
            step["is_copied_context"] = True
        step["llm_call_count"] = 0 if r.copy else 1
        self.add(step)
        self.open_calls = {c.id for c in r.calls}

    def write(self, records: Sequence[Record]) -> None:
        for rec in records:
            if not isinstance(rec, Result | TurnEnd):
                self.open_calls = set()
            if isinstance(rec, System | User):
                step: dict[str, Any] = {
                    "timestamp": iso_time(rec.time),
                    "source": "system" if isinstance(rec, System) else "user",
                    "message": content(rec.content, where(rec), self.notes),
                }
                if rec.copy:
                    step["is_copied_context"] = True
                self.add(step)
            elif isinstance(rec, Reply):
                self.reply(rec)
            elif isinstance(rec, Result):
                self.result(rec)
            elif isinstance(rec, Reset):
                self.notes.warnings.append(rec.note())
            elif isinstance(rec, Compaction):
                info: dict[str, Any] = {"trigger": rec.trigger}
                if rec.tokens_before is not None:
                    info["tokens_before"] = rec.tokens_before
                self.add(
                    {
                        "timestamp": iso_time(rec.time),
                        "source": "system",
                        "message": rec.summary,
                        "extra": {"foldlog": {"compaction": info}},
                    }
                )


def _requests(doc: Mapping[str, Any]) -> int:
    """How many agent steps of an ATIF document are requests (copies are not)."""
    return sum(1 for s in doc.get("steps", []) if s.get("source") == "agent" and s.get("llm_call_count"))


def trajectory(
    session: Session, children: Sequence[Session] = (), *, embedded: bool = False
) -> dict[str, Any]:
    """The ATIF document of ``session`` (children embedded), checked against the schema."""
    return _trajectory(session, children, embedded=embedded)[0]


def export(session: Session, children: Sequence[Session] = ()) -> tuple[dict[str, Any], list[str]]:
    """The ATIF document of ``session`` and the warnings about what it could not carry (also in
    its ``notes``; the sub-agents' warnings prefixed with their id)."""
    return _trajectory(session, children, embedded=False)


def _trajectory(
    session: Session, children: Sequence[Session], *, embedded: bool
) -> tuple[dict[str, Any], list[str]]:
    by_call = {call: child for child in children if (call := subagent_call(child)) is not None}
    walk = history(session)
    ledger = session_ledger(session)
    costs = {r.seq: r.cost for r in ledger.requests if r.kind == "reply"}
    steps = _Steps({call: child.id for call, child in by_call.items()}, costs)
    steps.write(walk.records)
    if not steps.steps:
        raise ExportError(f"session {session.id} has no messages: an ATIF trajectory needs at least one step")
    model = next((r.model for r in walk.records if isinstance(r, Reply) and r.model), None) or session.model
    from foldlog._core import __version__

    agent: dict[str, Any] = {"name": "foldlog", "version": str(__version__)}
    if model:
        agent["model_name"] = model
    doc: dict[str, Any] = {"schema_version": VERSION, "session_id": session.id, "trajectory_id": session.id}
    doc["agent"] = agent
    doc["steps"] = steps.steps
    subs: list[dict[str, Any]] = []
    sub_warnings: list[str] = []
    for child in by_call.values():
        sub, notes = _trajectory(child, (), embedded=True)
        subs.append(sub)
        sub_warnings += [f"sub-agent {child.id}: {w}" for w in notes]
    sub_prompt = sum(s["final_metrics"].get("total_prompt_tokens", 0) for s in subs)
    sub_completion = sum(s["final_metrics"].get("total_completion_tokens", 0) for s in subs)
    final: dict[str, Any] = {
        "total_prompt_tokens": steps.prompt + sub_prompt,
        "total_completion_tokens": steps.completion + sub_completion,
        "total_cached_tokens": steps.cached
        + sum(s["final_metrics"].get("total_cached_tokens", 0) for s in subs),
    }
    # the real total (summary calls and sub-agents included), only when every request is priced
    spend = ledger.session
    why: list[str] = []
    if spend.unpriced:
        why.append(f"{spend.unpriced} of {spend.requests} request(s) have no price")
    if spend.currency not in (None, "USD"):
        why.append(f"costs are in {spend.currency}")
    if any("total_cost_usd" not in s["final_metrics"] and _requests(s) for s in subs):
        why.append("a sub-agent's requests are not all priced in USD")
    if why:
        walk.warnings.append(f"total_cost_usd left out: {', '.join(why)}")
    elif spend.requests or subs:
        sub_cost = sum(s["final_metrics"].get("total_cost_usd", 0.0) for s in subs)
        final["total_cost_usd"] = spend.cost + sub_cost
    final["total_steps"] = len(steps.steps)
    if subs:
        final["extra"] = {
            "root_prompt_tokens": steps.prompt,
            "root_completion_tokens": steps.completion,
            "subagent_prompt_tokens": sub_prompt,
            "subagent_completion_tokens": sub_completion,
        }
    doc["final_metrics"] = final
    warnings = [*walk.warnings, *steps.notes.warnings]
    if warnings:
        doc["notes"] = "; ".join(warnings)
    if session.parent is not None and not embedded:
        doc["extra"] = {"foldlog": {"parent": dict(session.parent)}}
    if subs:
        doc["subagent_trajectories"] = subs
    if not embedded:
        check_atif(doc)
    return doc, [*warnings, *sub_warnings]
