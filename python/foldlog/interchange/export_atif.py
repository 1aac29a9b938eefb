"""foldlog session → ATIF-v1.7 trajectory (Agent Trajectory Interchange Format, ../shared/spec/atif.md).

One step per record of the history (`export_walk.history`), numbered from 1:

- a system message → a ``system`` step; a user message → a ``user`` step (content parts for
  images: ATIF references images by path or URL, so an inline image is written as a ``data:``
  URL);
- a reply → an ``agent`` step: its text, ``reasoning_content``, ``tool_calls`` (arguments
  parsed to an object), ``metrics`` (prompt tokens including cached ones, ``cached_tokens``,
  reasoning tokens in ``metrics.extra``), ``llm_call_count: 1``, and in ``observation`` the
  results of its calls that follow it (paired by ``source_call_id``; the error flag in the
  result's ``extra``);
- a result whose call is not in the step before it → a ``system`` step whose observation names
  the call in ``extra`` (ATIF pairs results only within a step);
- a compaction → a ``system`` step with the summary (``extra.foldlog.compaction``), followed by
  the messages the fold kept after its digest;
- a sub-agent's session → an embedded trajectory (``subagent_trajectories``) referenced from the
  result of the call it answers (``subagent_trajectory_ref``).

``final_metrics`` sums the steps' tokens (sub-agents included, split in its ``extra``). Every
document is checked against the closed schema (`atif_schema.check_atif`) before it is returned.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from foldlog.errors import ExportError
from foldlog.interchange.atif_schema import IMAGE_TYPES, check_atif
from foldlog.interchange.export_claude_code import iso_time, subagent_call
from foldlog.interchange.export_walk import Compaction, Record, Reply, Result, System, TurnEnd, User, history
from foldlog.log.text import display_text

if TYPE_CHECKING:
    from foldlog.log.session import Session

FORMAT = "atif"
VERSION = "ATIF-v1.7"


def _image_part(block: Mapping[str, Any]) -> dict[str, Any] | None:
    if block.get("type") == "image_url":
        url = block.get("image_url")
        url = url.get("url") if isinstance(url, Mapping) else url
        if not isinstance(url, str):
            return None
        media = url[5:].split(";")[0].split(",")[0] if url.startswith("data:") else _media_of(url)
    elif block.get("type") == "image":
        source = block.get("source") or {}
        media = str(source.get("media_type") or "image/png")
        if source.get("type") == "base64":
            url = f"data:{media};base64,{source.get('data') or ''}"
        else:
            url = str(source.get("url") or source.get("path") or "")
    else:
        return None
    return {
        "type": "image",
        "source": {"media_type": media if media in IMAGE_TYPES else "image/png", "path": url},
    }


def _media_of(url: str) -> str:
    ext = url.rsplit(".", 1)[-1].lower().split("?")[0]
    return {"jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp"}.get(
        ext, "image/png"
    )


def content(value: Any) -> str | list[dict[str, Any]]:
    """Message content as ATIF: a string, or text and image parts when it holds images."""
    if not isinstance(value, list):
        return display_text(value)
    parts: list[dict[str, Any]] = []
    has_image = False
    for block in value:
        image = _image_part(block) if isinstance(block, Mapping) else None
        if image is not None:
            has_image = True
            parts.append(image)
        else:
            parts.append({"type": "text", "text": display_text([block])})
    return parts if has_image else display_text(value)


def _arguments(raw: str) -> dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"arguments": raw}


class _Steps:
    def __init__(self, children: Mapping[str, str]) -> None:
        self.steps: list[dict[str, Any]] = []
        self.children = children
        self.open_calls: set[str] = set()
        self.prompt = self.completion = self.cached = 0

    def add(self, step: dict[str, Any]) -> dict[str, Any]:
        step = {"step_id": len(self.steps) + 1, **step}
        self.steps.append(step)
        return step

    def result(self, r: Result) -> None:
        entry: dict[str, Any] = {"content": content(r.content), "extra": {"is_error": r.is_error}}
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
        self.add(
            {
                "timestamp": iso_time(r.time),
                "source": "system",
                "message": "",
                "observation": {"results": [entry]},
            }
        )

    def reply(self, r: Reply) -> None:
        step: dict[str, Any] = {"timestamp": iso_time(r.time), "source": "agent"}
        if r.model:
            step["model_name"] = r.model
        step["message"] = content(r.content)
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
            if r.usage.get("reasoningTokens"):
                metrics["extra"] = {"reasoning_tokens": int(r.usage["reasoningTokens"])}
            step["metrics"] = metrics
            self.prompt += prompt
            self.completion += completion
            self.cached += cached
        step["llm_call_count"] = 1
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
                    "message": content(rec.content),
                }
                self.add(step)
            elif isinstance(rec, Reply):
                self.reply(rec)
            elif isinstance(rec, Result):
                self.result(rec)
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


def trajectory(
    session: Session, children: Sequence[Session] = (), *, embedded: bool = False
) -> dict[str, Any]:
    """The ATIF document of ``session`` (children embedded), checked against the schema."""
    by_call = {call: child for child in children if (call := subagent_call(child)) is not None}
    walk = history(session)
    steps = _Steps({call: child.id for call, child in by_call.items()})
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
    subs = [trajectory(child, embedded=True) for child in by_call.values()]
    sub_prompt = sum(s["final_metrics"].get("total_prompt_tokens", 0) for s in subs)
    sub_completion = sum(s["final_metrics"].get("total_completion_tokens", 0) for s in subs)
    final: dict[str, Any] = {
        "total_prompt_tokens": steps.prompt + sub_prompt,
        "total_completion_tokens": steps.completion + sub_completion,
        "total_cached_tokens": steps.cached
        + sum(s["final_metrics"].get("total_cached_tokens", 0) for s in subs),
        "total_steps": len(steps.steps),
    }
    if subs:
        final["extra"] = {
            "root_prompt_tokens": steps.prompt,
            "root_completion_tokens": steps.completion,
            "subagent_prompt_tokens": sub_prompt,
            "subagent_completion_tokens": sub_completion,
        }
    doc["final_metrics"] = final
    if walk.warnings:
        doc["notes"] = "; ".join(walk.warnings)
    if session.parent is not None and not embedded:
        doc["extra"] = {"foldlog": {"parent": dict(session.parent)}}
    if subs:
        doc["subagent_trajectories"] = subs
    if not embedded:
        check_atif(doc)
    return doc
