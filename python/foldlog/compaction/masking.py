"""Observation masking (the ``mask`` and ``hybrid`` strategies, docs/compaction.md): every tool
result before the planner's tail is replaced on the surface by a stub naming the call, its size
and its seq in the log (and, for a failed result, its first line; the first identifiers it
held); the calls stay. Each stub is a
``tool/result`` event with the surface op ``{"op": "mask", "seq": S}`` (docs/log-format.md,
"mask"): the core checks and replays it, and writes the stub's text (`foldlog._core.mask_stub`);
what counts as failed is the error probes' rule (`facts.is_error_result`), not a second one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog import _core
from foldlog.compaction import facts, planning
from foldlog.log.grammar.writer import masked_result
from foldlog.log.text import message_text

if TYPE_CHECKING:
    from foldlog.compaction.compactor import CompactionPreview
    from foldlog.log.session import Session

MASKED_PREFIX: str = _core.MASKED_PREFIX  # how the core recognises a masked result


@dataclass(frozen=True, slots=True)
class Masks:
    """The mask events of one compaction and about how many tokens they save."""

    events: tuple[dict[str, Any], ...]
    saved: int

    def __len__(self) -> int:
        return len(self.events)


def _calls(messages: Sequence[Mapping[str, Any]], end: int) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for m in messages[:end]:
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            args = fn.get("arguments")
            out[str(call.get("id") or "")] = (
                str(fn.get("name") or ""),
                args if isinstance(args, str) else "",
            )
    return out


def plan_masks(session: Session, planned: CompactionPreview, model: str | None, keep_errors: bool) -> Masks:
    """The mask events for every tool result before the tail of ``planned`` that is not masked
    or elided yet, whose stub is smaller than it, and (``keep_errors``: the ``errors`` keep
    policy) that is not a failed call's result. The stub of a result that failed by the error
    probes' rule (`facts.is_error_result`) keeps its first line (`facts.error_line`)."""
    messages = session.derive_messages()
    tokens = planned.history.tokens()
    _roles, _tokens, flags, _callers, _bytes = planned.history.columns()
    tail = planned.plan.tail_start
    calls = _calls(messages, tail)
    tokenizer = session.tokenizer(model)
    events: list[dict[str, Any]] = []
    saved = 0
    for i in range(tail):
        m = messages[i]
        if m.get("role") != "tool":
            continue
        text = message_text(m)
        if text.startswith((MASKED_PREFIX, planning.ELIDED_PREFIX)):
            continue
        if keep_errors and (m.get("is_error") or flags[i] & _core.PLAN_ERROR_RESULT):
            continue
        seq = planned.seqs[i]
        call_id = str(m.get("tool_call_id") or "")
        name, args = calls.get(call_id, (str(m.get("name") or ""), ""))
        # a failed result's stub keeps what failed (the error probes' rule, `facts`): masking
        # hides a result's bulk, never that the call failed or how
        failure = facts.error_line(m) if facts.is_error_result(m) else None
        # and the identifiers it held, the latest mentions first (the identifier probes' rule):
        # what a later step asks for by name, and what a fold loses first
        ids = _latest_distinct(value for _kind, value in reversed(facts.identifiers(text)))
        stub = _core.mask_stub(name, args, int(tokens[i]), seq, failure, ids)
        message: dict[str, Any] = {"role": "tool", "content": stub}
        if call_id:
            message["toolCallId"] = call_id
        if name:
            message["toolName"] = name
        # an estimate of the stub's size, to skip results a stub would not shrink; the compactor
        # counts the masked surface again, as the planner does
        stub_tokens = int(tokenizer.count_message({"role": "tool", "tool_call_id": call_id, "content": stub}))
        if stub_tokens >= tokens[i]:
            continue  # a stub as large as the result saves nothing
        saved += int(tokens[i]) - stub_tokens
        events.append(masked_result(seq, session.events[seq]["data"], message, int(tokens[i])))
    return Masks(tuple(events), saved)


def _latest_distinct(values: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for v in values:
        if v.lower() not in seen:
            seen.add(v.lower())
            out.append(v)
    return out


__all__ = ["MASKED_PREFIX", "Masks", "plan_masks"]
