"""A closed-schema check of ATIF documents (v1.0–v1.7), written from the reference models'
field lists and validators (../shared/spec/atif.md, sections 2–6): every object is closed
(unknown keys are errors), types as the models declare them, and the validators' rules —
contiguous 1-based ``step_id``, results paired with a call of the same step, ISO 8601 times,
agent-only fields on agent steps, v1.7 sub-agent references and embedded trajectories.

`atif_errors(doc)` lists every problem (empty: valid); `check_atif(doc)` raises `ExportError`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from foldlog.errors import ExportError

VERSIONS = tuple(f"ATIF-v1.{n}" for n in range(8))
IMAGE_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")
_AGENT_ONLY = ("model_name", "reasoning_effort", "reasoning_content", "tool_calls", "metrics")

Check = Callable[[Any], bool]


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return (isinstance(v, int | float)) and not isinstance(v, bool)


def _dict(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) for k in v)


def _ints(v: Any) -> bool:
    return isinstance(v, list) and all(_int(x) for x in v)


def _nums(v: Any) -> bool:
    return isinstance(v, list) and all(_num(x) for x in v)


class _Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, where: str, message: str) -> None:
        self.errors.append(f"{where}: {message}")

    def closed(
        self, obj: Any, where: str, fields: Mapping[str, Check], required: tuple[str, ...] = ()
    ) -> bool:
        """An object with only ``fields`` (each of its type; ``None`` means omitted)."""
        if not isinstance(obj, dict):
            self.fail(where, f"must be an object, not {type(obj).__name__}")
            return False
        for key in obj:
            if key not in fields:
                self.fail(
                    where, f"unknown field {key!r} (ATIF objects are closed: custom data goes in 'extra')"
                )
        for key in required:
            if obj.get(key) is None:
                self.fail(where, f"missing required field {key!r}")
        for key, check in fields.items():
            value = obj.get(key)
            if value is not None and not check(value):
                self.fail(f"{where}.{key}", f"has the wrong type ({type(value).__name__})")
        return True

    def content(self, value: Any, where: str, *, required: bool) -> None:
        if value is None:
            if required:
                self.fail(where, "is required (may be '')")
            return
        if isinstance(value, str):
            return
        if not isinstance(value, list):
            self.fail(where, "must be a string or a list of content parts")
            return
        for i, part in enumerate(value):
            at = f"{where}[{i}]"
            if not self.closed(part, at, {"type": _str, "text": _str, "source": _dict}, ("type",)):
                continue
            if part.get("type") == "text":
                if part.get("text") is None or "source" in part:
                    self.fail(at, "a text part needs 'text' and no 'source'")
            elif part.get("type") == "image":
                if "text" in part or part.get("source") is None:
                    self.fail(at, "an image part needs 'source' and no 'text'")
                elif self.closed(
                    part["source"], f"{at}.source", {"media_type": _str, "path": _str}, ("media_type", "path")
                ):
                    if part["source"].get("media_type") not in IMAGE_TYPES:
                        self.fail(f"{at}.source.media_type", f"must be one of {', '.join(IMAGE_TYPES)}")
            else:
                self.fail(f"{at}.type", "must be 'text' or 'image'")

    def trajectory(self, doc: Any, where: str, *, embedded: bool) -> None:
        fields: dict[str, Check] = {
            "schema_version": _str,
            "session_id": _str,
            "trajectory_id": _str,
            "agent": _dict,
            "steps": lambda v: isinstance(v, list),
            "notes": _str,
            "final_metrics": _dict,
            "continued_trajectory_ref": _str,
            "extra": _dict,
            "subagent_trajectories": lambda v: isinstance(v, list),
        }
        if not self.closed(doc, where, fields, ("agent", "steps")):
            return
        version = doc.get("schema_version", VERSIONS[-1])
        if version not in VERSIONS:
            self.fail(
                f"{where}.schema_version", f"must be one of {VERSIONS[0]}..{VERSIONS[-1]}, not {version!r}"
            )
        v17 = version == "ATIF-v1.7"
        if not v17 and doc.get("session_id") is None:
            self.fail(where, f"missing required field 'session_id' ({version})")
        if embedded and doc.get("trajectory_id") is None:
            self.fail(where, "an embedded sub-agent trajectory needs a 'trajectory_id'")
        self.agent(doc.get("agent"), f"{where}.agent")
        steps = doc.get("steps")
        if isinstance(steps, list):
            if not steps:
                self.fail(f"{where}.steps", "needs at least one step")
            for i, step in enumerate(steps):
                self.step(step, f"{where}.steps[{i}]", i + 1, v17)
        if isinstance(doc.get("final_metrics"), dict):
            self.closed(
                doc["final_metrics"],
                f"{where}.final_metrics",
                {
                    "total_prompt_tokens": _int,
                    "total_completion_tokens": _int,
                    "total_cached_tokens": _int,
                    "total_cost_usd": _num,
                    "total_steps": lambda v: _int(v) and v >= 0,
                    "extra": _dict,
                },
            )
        subs = doc.get("subagent_trajectories")
        if isinstance(subs, list):
            if not v17:
                self.fail(f"{where}.subagent_trajectories", "is a v1.7 field")
            ids: set[str] = set()
            for i, sub in enumerate(subs):
                at = f"{where}.subagent_trajectories[{i}]"
                self.trajectory(sub, at, embedded=True)
                tid = sub.get("trajectory_id") if isinstance(sub, dict) else None
                if isinstance(tid, str):
                    if tid in ids:
                        self.fail(at, f"trajectory_id {tid!r} is not unique among the embedded trajectories")
                    ids.add(tid)

    def agent(self, agent: Any, where: str) -> None:
        fields: dict[str, Check] = {
            "name": _str,
            "version": _str,
            "model_name": _str,
            "tool_definitions": lambda v: isinstance(v, list) and all(_dict(x) for x in v),
            "extra": _dict,
        }
        self.closed(agent, where, fields, ("name", "version"))

    def step(self, step: Any, where: str, expected_id: int, v17: bool) -> None:
        fields: dict[str, Check] = {
            "step_id": _int,
            "timestamp": _str,
            "source": _str,
            "model_name": _str,
            "reasoning_effort": lambda v: _str(v) or _num(v),
            "message": lambda v: True,
            "reasoning_content": _str,
            "tool_calls": lambda v: isinstance(v, list),
            "observation": _dict,
            "metrics": _dict,
            "is_copied_context": lambda v: isinstance(v, bool),
            "llm_call_count": lambda v: _int(v) and v >= 0,
            "extra": _dict,
        }
        if not self.closed(step, where, fields, ("step_id", "source")):
            return
        if step.get("step_id") != expected_id:
            self.fail(
                f"{where}.step_id",
                f"must be {expected_id} (1-based, contiguous), not {step.get('step_id')!r}",
            )
        source = step.get("source")
        if source not in ("system", "user", "agent"):
            self.fail(f"{where}.source", f"must be 'system', 'user' or 'agent', not {source!r}")
        if source != "agent":
            for key in _AGENT_ONLY:
                if step.get(key) is not None:
                    self.fail(where, f"{key!r} is allowed only on agent steps")
        if step.get("timestamp") is not None and not _iso(step["timestamp"]):
            self.fail(f"{where}.timestamp", f"is not ISO 8601: {step['timestamp']!r}")
        self.content(step.get("message"), f"{where}.message", required=True)
        call_ids: set[str] = set()
        for i, call in enumerate(step.get("tool_calls") or []):
            at = f"{where}.tool_calls[{i}]"
            call_fields: dict[str, Check] = {"tool_call_id": _str, "function_name": _str, "arguments": _dict}
            if v17:
                call_fields["extra"] = _dict
            if self.closed(call, at, call_fields, ("tool_call_id", "function_name", "arguments")):
                if isinstance(call.get("tool_call_id"), str):
                    call_ids.add(call["tool_call_id"])
        if isinstance(step.get("observation"), dict):
            self.observation(step["observation"], f"{where}.observation", call_ids, v17)
        if isinstance(step.get("metrics"), dict):
            self.closed(
                step["metrics"],
                f"{where}.metrics",
                {
                    "prompt_tokens": _int,
                    "completion_tokens": _int,
                    "cached_tokens": _int,
                    "cost_usd": _num,
                    "prompt_token_ids": _ints,
                    "completion_token_ids": _ints,
                    "logprobs": _nums,
                    "extra": _dict,
                },
            )

    def observation(self, obs: Mapping[str, Any], where: str, call_ids: set[str], v17: bool) -> None:
        if not self.closed(obs, where, {"results": lambda v: isinstance(v, list)}, ("results",)):
            return
        for i, result in enumerate(obs.get("results") or []):
            at = f"{where}.results[{i}]"
            fields: dict[str, Check] = {
                "source_call_id": _str,
                "content": lambda v: True,
                "subagent_trajectory_ref": lambda v: isinstance(v, list),
            }
            if v17:
                fields["extra"] = _dict
            if not self.closed(result, at, fields):
                continue
            sid = result.get("source_call_id")
            if sid is not None and sid not in call_ids:
                self.fail(f"{at}.source_call_id", f"{sid!r} is not a tool_call_id of this step")
            self.content(result.get("content"), f"{at}.content", required=False)
            for j, ref in enumerate(result.get("subagent_trajectory_ref") or []):
                self.subagent_ref(ref, f"{at}.subagent_trajectory_ref[{j}]", v17)

    def subagent_ref(self, ref: Any, where: str, v17: bool) -> None:
        fields: dict[str, Check] = {"session_id": _str, "trajectory_path": _str, "extra": _dict}
        if v17:
            fields["trajectory_id"] = _str
        if not self.closed(ref, where, fields, () if v17 else ("session_id",)):
            return
        if v17 and ref.get("trajectory_id") is None and ref.get("trajectory_path") is None:
            self.fail(where, "a v1.7 sub-agent reference needs 'trajectory_id' or 'trajectory_path'")


_ISO = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?")


def _iso(text: str) -> bool:
    if not _ISO.fullmatch(text):
        return False
    try:
        datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def atif_errors(doc: Any) -> list[str]:
    """Every way ``doc`` breaks the ATIF reference models (empty when it is valid)."""
    checker = _Checker()
    checker.trajectory(doc, "trajectory", embedded=False)
    return checker.errors


def check_atif(doc: Any) -> None:
    """Raise `ExportError` listing the problems when ``doc`` is not a valid ATIF document."""
    errors = atif_errors(doc)
    if errors:
        shown = "; ".join(errors[:10]) + (f"; … {len(errors) - 10} more" if len(errors) > 10 else "")
        raise ExportError(f"not a valid ATIF document: {shown}")
