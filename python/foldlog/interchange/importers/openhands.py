"""OpenHands event streams → foldlog events.

Accepted documents: evaluation output JSONL (one task per line, events under ``history``), a bare
JSON array of events (runtime trajectories), and the older flat events of resolver outputs
(arguments beside ``action`` instead of under ``args``).

An agent action carrying ``tool_call_metadata`` belongs to a model response
(``model_response``, OpenAI shape); several actions can share one response (parallel calls),
so the assistant message is written once, with all of that response's calls, when its first
action appears. Observations answer calls by ``tool_call_id``. Actions without metadata
become synthesised calls (``call_N``, name = the action) answered by the next observation.
State changes, ``null`` events and recall (workspace-context lookups) are not model history.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder
from foldlog.interchange.importers.openai_messages import parse_tool_calls, usage_from_openai
from foldlog.interchange.source import expect, iso_ms, iter_jsonl, load_json, need_list
from foldlog.log.text import display_text

FORMAT = "openhands"

_ENVELOPE = {
    "id",
    "timestamp",
    "source",
    "message",
    "action",
    "observation",
    "args",
    "extras",
    "cause",
    "content",
    "tool_call_metadata",
    "llm_metrics",
    "success",
    "timeout",
}
_SKIP_ACTIONS = {"recall", "change_agent_state", "null"}
_SKIP_OBSERVATIONS = {"recall", "agent_state_changed", "null"}


def _args(event: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(event.get("args"), Mapping):
        return dict(event["args"])
    return {k: v for k, v in event.items() if k not in _ENVELOPE}


def _with_images(text: Any, urls: Any) -> Any:
    """A user message's text with its ``image_urls`` (URLs or data URLs) as ``image_url`` blocks."""
    if not isinstance(urls, list) or not urls:
        return text
    blocks: list[dict[str, Any]] = (
        [{"type": "text", "text": display_text(text)}] if display_text(text) else []
    )
    blocks += [{"type": "image_url", "image_url": {"url": u}} for u in urls if isinstance(u, str) and u]
    return blocks


class _Converter:
    def __init__(self, path: str | Path, line: int | None) -> None:
        self.path = path
        self.line = line
        self.b = EventBuilder()
        self.responses: set[str] = set()
        self.model: str | None = None

    def action(self, index: int, e: Mapping[str, Any]) -> None:
        kind = e["action"]
        args = _args(e)
        source = e.get("source") or ("user" if kind == "message" and not self.responses else "agent")
        meta = e.get("tool_call_metadata")
        if kind in _SKIP_ACTIONS:
            return
        if kind == "system":
            self.b.system(display_text(args.get("content", e.get("message", ""))))
        elif isinstance(meta, Mapping):
            self._response(index, meta)
        elif kind == "message":
            text = args.get("content", e.get("message", ""))
            if source == "user":
                self.b.user(_with_images(text, args.get("image_urls")))
            else:
                self.b.assistant(display_text(text))
        elif kind == "finish":
            self.b.assistant(
                display_text(args.get("final_thought") or args.get("thought") or e.get("message", ""))
            )
        else:
            thought = args.pop("thought", "") or ""
            self.responses.add(f"synth-{index}")
            self.b.assistant(
                display_text(thought), tool_calls=[(None, kind, json.dumps(args, ensure_ascii=False))]
            )

    def _response(self, index: int, meta: Mapping[str, Any]) -> None:
        response = meta.get("model_response")
        expect(
            isinstance(response, Mapping), "tool_call_metadata without model_response", self.path, self.line
        )
        assert isinstance(response, Mapping)
        key = str(response.get("id") or f"response-{index}")
        if key in self.responses:
            return  # a parallel call of a response already written
        self.responses.add(key)
        self.model = self.model or response.get("model")
        choices = response.get("choices") or []
        message = choices[0].get("message", {}) if choices and isinstance(choices[0], Mapping) else {}
        calls = parse_tool_calls(message.get("tool_calls"), self.path, self.line)
        if not calls:  # the metadata names the call even when the response lost it
            calls = [(meta.get("tool_call_id"), str(meta.get("function_name") or ""), "{}")]
        self.b.assistant(
            display_text(message.get("content")),
            reasoning=message.get("reasoning_content") or None,
            tool_calls=calls,
            usage=usage_from_openai(response.get("usage")),
        )

    def observation(self, e: Mapping[str, Any]) -> None:
        kind = e["observation"]
        if kind in _SKIP_OBSERVATIONS:
            return
        content = self.b.content(e.get("content", e.get("message", "")))
        is_error = kind == "error" or str(e.get("success", "")).lower() == "false"
        meta = e.get("tool_call_metadata")
        if isinstance(meta, Mapping) and meta.get("tool_call_id"):
            self.b.tool_result(
                meta["tool_call_id"], content, name=meta.get("function_name"), is_error=is_error
            )
        elif self.b.pending_ids():
            self.b.tool_result(None, content, is_error=is_error)
        else:  # e.g. an error report to the agent: the environment speaks inside the turn
            self.b.user(content, source="environment", new_turn=False)

    def run(self, events: list[Any], ident: str | None, meta: dict[str, Any]) -> Conversation:
        for index, e in enumerate(events):
            self.b.line = self.line if self.line is not None else index + 1
            expect(isinstance(e, Mapping), f"event {index} is not an object", self.path, self.b.line)
            self.b.time = iso_ms(e.get("timestamp")) or self.b.time
            if "action" in e:
                self.action(index, e)
            elif "observation" in e:
                self.observation(e)
            else:
                expect(False, f"event {index} has neither action nor observation", self.path, self.b.line)
        if self.model:
            meta.setdefault("model", self.model)
        return self.b.conversation(id=ident, meta=meta)


def convert(path: str | Path) -> list[Conversation]:
    base = {"format": FORMAT, "source": Path(path).name}
    if Path(path).suffix == ".jsonl":
        out: list[Conversation] = []
        for number, rec in iter_jsonl(path, "OpenHands evaluation outputs (.jsonl)"):
            history = need_list(rec.get("history"), 'record without a "history" array', path, number)
            ident = rec.get("instance_id") or f"{Path(path).stem}-{number}"
            meta = {**base, "line": number}
            if isinstance(rec.get("metadata"), Mapping) and "agent_class" in rec["metadata"]:
                meta["agent_class"] = rec["metadata"]["agent_class"]
            out.append(_Converter(path, number).run(history, str(ident), meta))
        return out
    doc = load_json(path)
    if isinstance(doc, Mapping) and isinstance(doc.get("history"), list):
        doc = doc["history"]
    expect(isinstance(doc, list), "expected a JSON array of OpenHands events", path, None)
    return [_Converter(path, None).run(doc, Path(path).stem, dict(base))]
