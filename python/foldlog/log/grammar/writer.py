"""The one writer of the log's grammar (docs/log-format.md, "Event types"; compaction.md).

:class:`EventWriter` builds the data of every event kind and hands each event to an ``append``
function, which stores it and returns its seq. Who appends differs — the agent appends to its
session as the loop goes (`foldlog.agent.recorder.StepRecorder`), compaction appends its fold to
the session (`EventWriter.on`), the transcript importers collect a batch
(`foldlog.interchange.events.EventBuilder`) — but the shapes are made here only, so an imported
transcript, a live run and a fold all write the same events.

:func:`event` builds the envelope of an event for a batch write (`Session.append_events`) without
appending it, for callers that must write several events all or nothing; :func:`masked_result` is
the one such event (masking's stubs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from foldlog.log.grammar import kinds

SurfaceOp = str | dict[str, Any]
#: ``append(type, data, surface_op, source_event_seqs) -> seq``
Append = Callable[[str, dict[str, Any], "SurfaceOp | None", "Sequence[int] | None"], int]
#: a tool call as the log keeps it: ``(call id, tool name, raw JSON arguments)``
CallSpec = tuple[str, str, str]

#: ``user/message`` ``source`` of a fold's digest
DIGEST_SOURCE = "compaction"


def assistant_message(
    content: Any,
    *,
    reasoning: str | None = None,
    calls: Sequence[CallSpec] = (),
    thinking_blocks: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    """An assistant message in the OpenAI chat shape the log keeps (``thinking_blocks``: the
    provider's signed reasoning, sent back verbatim: docs/log-format.md)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if reasoning is not None:
        message["reasoning_content"] = reasoning
    if thinking_blocks:
        message["thinking_blocks"] = [dict(b) for b in thinking_blocks]
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls
        ]
    return message


def tool_message(call_id: str, name: str, content: Any, is_error: bool) -> dict[str, Any]:
    """The message of a ``tool/result`` event."""
    return {
        "role": "tool",
        "toolCallId": call_id,
        "toolName": name,
        "content": content,
        "isError": bool(is_error),
    }


def event(
    type_: str,
    data: Mapping[str, Any],
    surface_op: SurfaceOp | None = None,
    sources: Sequence[int] | None = None,
) -> dict[str, Any]:
    """An event's envelope for a batch write (`Session.append_events`)."""
    item: dict[str, Any] = {"type": type_, "data": dict(data)}
    if surface_op is not None:
        item["surfaceOp"] = surface_op
    if sources is not None:
        item["sourceEventSeqs"] = list(sources)
    return item


class EventLog(Protocol):
    """What a writer can append to directly: a `foldlog.Session`."""

    def append_event(
        self,
        type: str,
        data: Mapping[str, Any],
        *,
        surface_op: SurfaceOp | None = None,
        source_event_seqs: Sequence[int] | None = None,
    ) -> int: ...


class EventWriter:
    """Builds the grammar's events; ``append`` stores each one and returns its seq."""

    __slots__ = ("_append",)

    def __init__(self, append: Append) -> None:
        self._append = append

    @classmethod
    def on(cls, log: EventLog) -> EventWriter:
        """A writer appending each event to ``log`` as it is made (a session)."""

        def append(
            type_: str, data: dict[str, Any], surface_op: SurfaceOp | None, sources: Sequence[int] | None
        ) -> int:
            return log.append_event(type_, data, surface_op=surface_op, source_event_seqs=sources)

        return cls(append)

    # --- turns and steps -------------------------------------------------------------------

    def turn_start(self, turn: int, *, resumed: str | None = None) -> int:
        """``resumed``: the turn continues after it ended ``interrupted`` or ``approval``
        (`Agent.resume`, docs/durable-runs.md); the same turn number, started again."""
        data: dict[str, Any] = {"turn": turn}
        if resumed is not None:
            data["resumed"] = resumed
        return self._append(kinds.TURN_START, data, None, None)

    def step_start(self, turn: int, step: int) -> int:
        return self._append(kinds.STEP_START, {"turn": turn, "step": step}, None, None)

    def step_end(self, turn: int, step: int) -> int:
        return self._append(kinds.STEP_END, {"turn": turn, "step": step}, None, None)

    def turn_end(self, turn: int, kind: str, detail: Mapping[str, Any] | None = None) -> int:
        return self._append(
            kinds.TURN_END, {"turn": turn, "reason": {"kind": kind, **(detail or {})}}, None, None
        )

    # --- messages ----------------------------------------------------------------------------

    def system(self, content: Any) -> int:
        return self._append(kinds.SYSTEM_MESSAGE, {"content": content}, "append", None)

    def user(self, message: Mapping[str, Any], surface_op: SurfaceOp = "append") -> int:
        """A user message (``role``, ``content``, and ``source`` when it is not typed input);
        ``surface_op``: a reset's ``{"op":"reset",…}`` when the message starts a new root."""
        return self._append(kinds.USER_MESSAGE, dict(message), surface_op, None)

    def assistant(
        self,
        turn: int,
        step: int,
        message: dict[str, Any],
        *,
        usage: Mapping[str, Any] | None = None,
        interrupted: bool = False,
        extra: Mapping[str, Any] | None = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        """A reply (``interrupted``: the text of a stream that stopped early); ``sources``: the
        ``assistant/chunk`` events it was assembled from."""
        data: dict[str, Any] = {"turn": turn, "step": step, "message": message}
        if interrupted:
            data["interrupted"] = True
        if usage:
            data["usage"] = dict(usage)
        if extra:
            data.update(extra)
        return self._append(kinds.ASSISTANT_MESSAGE, data, "append", sources)

    def chunk(self, turn: int, step: int, chunk: Mapping[str, Any]) -> int:
        """One recorded stream chunk (``Options.record_chunks``; ``chunk``: the provider chunk's
        data, `foldlog.providers.base.chunk_data`)."""
        return self._append(kinds.ASSISTANT_CHUNK, {"turn": turn, "step": step, "chunk": chunk}, None, None)

    def tool_call(self, turn: int, step: int, call_id: str, name: str, arguments: str) -> int:
        data = {"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}
        return self._append(kinds.TOOL_CALL, data, None, None)

    def tool_result(
        self,
        turn: int,
        step: int,
        call_id: str,
        name: str,
        content: Any,
        is_error: bool,
        *,
        meta: Mapping[str, Any] | None = None,
        call_seq: int | None = None,
        replaces: int | None = None,
    ) -> int:
        """The result of a call (``call_seq``: its ``tool/call`` event; ``None`` when no call was
        seen, as in a foreign transcript). ``meta``: what was done to the output to make it
        loggable (``utf8Replaced``, ``omittedBytes``, …). ``replaces``: the surface node of the
        result that stood in for it (a resumed turn's: docs/durable-runs.md), which it takes the
        place of."""
        data: dict[str, Any] = {
            "turn": turn,
            "step": step,
            "message": tool_message(call_id, name, content, is_error),
        }
        if meta:
            data["meta"] = dict(meta)
        sources = [call_seq] if call_seq is not None else []
        op: SurfaceOp = "append"
        if replaces is not None:
            op = {"op": "replace", "start": replaces, "end": replaces}
            sources = sorted({*sources, replaces})
        return self._append(kinds.TOOL_RESULT, data, op, sources)

    def replaced_result(self, seq: int, data: Mapping[str, Any]) -> int:
        """A shortened copy of the ``tool/result`` at ``seq`` taking its place (compaction's prune)."""
        return self._append(kinds.TOOL_RESULT, dict(data), {"op": "replace", "start": seq, "end": seq}, [seq])

    def request_header(self, header: Mapping[str, Any]) -> int:
        """What the next requests are made with: ``{model, tools, params}``."""
        return self._append(kinds.REQUEST_HEADER, dict(header), None, None)

    def output_validated(
        self, turn: int, step: int, *, name: str, mode: str, retries: int, value: Any
    ) -> int:
        """A turn's validated typed answer (docs/output.md): the answer type's ``name``, ``mode``
        (``"tool"`` or ``"native"``), the ``retries`` it took and its JSON ``value``."""
        data = {"turn": turn, "step": step, "name": name, "mode": mode, "retries": retries, "value": value}
        return self._append(kinds.OUTPUT_VALIDATED, data, None, None)

    # --- approvals (docs/durable-runs.md) -------------------------------------------------------

    def approval_request(self, turn: int, step: int, calls: Sequence[Mapping[str, Any]]) -> int:
        """The calls of a step that wait for a person: ``calls`` ``[{callId, name, arguments,
        question?}]`` (``question``: a hook's `ask`); written before the turn ends ``approval``."""
        data = {"turn": turn, "step": step, "calls": [dict(c) for c in calls]}
        return self._append(kinds.APPROVAL_REQUEST, data, None, None)

    def approval_answer(self, call_id: str, approved: bool, reason: str | None = None) -> int:
        """A person's answer to a waiting call (`Session.approve` / `Session.deny`)."""
        data: dict[str, Any] = {"callId": call_id, "approved": bool(approved)}
        if reason is not None:
            data["reason"] = reason
        return self._append(kinds.APPROVAL_ANSWER, data, None, None)

    # --- erasure (docs/log-format.md, "Erasure") ------------------------------------------------

    def erasure(self, seqs: Sequence[int], reason: str, at: int) -> int:
        """``{seqs, reason, at}``: the events whose content was erased (their data are tombstones
        now: `foldlog.log.erasure`), why, and when (epoch ms). Never the erased content."""
        data = {"seqs": sorted(set(seqs)), "reason": reason, "at": at}
        return self._append(kinds.ERASURE, data, None, None)

    # --- compaction (docs/compaction.md) -------------------------------------------------------
    # One shape for every fold: the agent's (`foldlog.compaction.Compactor`) and an imported
    # transcript's (`foldlog.interchange.events.EventBuilder.compaction`).

    def compaction_start(
        self, cid: str, trigger: str, *, strategy: str | None = None, focus: str | None = None
    ) -> int:
        """``{id, trigger, strategy?, focus?}`` (``strategy``: the agent's; an import has none)."""
        data: dict[str, Any] = {"id": cid, "trigger": trigger}
        if strategy is not None:
            data["strategy"] = strategy
        if focus:
            data["focus"] = focus
        return self._append(kinds.COMPACTION_START, data, None, None)

    def compaction_summary(
        self,
        cid: str,
        summary: str,
        folded: Sequence[int],
        kept: Sequence[int],
        *,
        mechanical: bool,
        tokens_before: int | None = None,
        tokens_after: int | None = None,
        model: str | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """``{id, summary, folded, kept, tokensBefore?, tokensAfter?, model?, mechanical, …extra}``:
        ``folded``, the surface seqs the digest takes the place of; ``kept``, those of the fold's
        span kept in place; ``extra``: ``archive``, ``released``, what the summary calls spent
        (``requests``, ``usage``, ``cost``, ``countedTokens``), an import's ``source``."""
        data: dict[str, Any] = {"id": cid, "summary": summary, "folded": list(folded), "kept": list(kept)}
        if tokens_before is not None:
            data["tokensBefore"] = tokens_before
        if tokens_after is not None:
            data["tokensAfter"] = tokens_after
        if model is not None:
            data["model"] = model
        data["mechanical"] = mechanical
        if extra:
            data.update(extra)
        return self._append(kinds.COMPACTION_SUMMARY, data, None, None)

    def digest(self, content: Any, span: Sequence[int], keep: Sequence[int] = ()) -> int:
        """The fold's digest: a ``user/message`` that takes the place of the surface nodes
        ``span`` (in order, first to last) but for ``keep``, which stay in place; its sources are
        the nodes it replaces. A fold of nothing (an empty ``span``) is appended."""
        op: SurfaceOp = "append"
        if span:
            op = {"op": "fold", "start": span[0], "end": span[-1], "keep": list(keep)}
        kept = set(keep)
        message = {"role": "user", "content": content, "source": DIGEST_SOURCE}
        return self._append(kinds.USER_MESSAGE, message, op, [s for s in span if s not in kept])

    def compaction_end(
        self,
        cid: str,
        *,
        error: str | None = None,
        masked: int = 0,
        pruned: int = 0,
        skipped: str | None = None,
    ) -> int:
        """``{id, error?, masked?, pruned?, skipped?}``: why it failed; the results it masked or
        pruned; why it folded nothing after them (the planner's reason, or ``pruned``)."""
        data: dict[str, Any] = {"id": cid}
        if error is not None:
            data["error"] = error
        if masked:
            data["masked"] = masked
        if pruned:
            data["pruned"] = pruned
        if skipped is not None:
            data["skipped"] = skipped
        return self._append(kinds.COMPACTION_END, data, None, None)


def masked_result(
    seq: int, turn_step: Mapping[str, Any], message: Mapping[str, Any], tokens: int
) -> dict[str, Any]:
    """The envelope of a masking stub: a ``tool/result`` taking the place of the one at ``seq``
    (``{"op":"mask"}``), for a batch write; ``tokens``: what the masked result counted."""
    data = {k: v for k, v in turn_step.items() if k in ("turn", "step")}
    data.update({"message": dict(message), "masked": {"seq": seq, "tokens": tokens}})
    return event(kinds.TOOL_RESULT, data, {"op": "mask", "seq": seq}, [seq])


__all__ = [
    "DIGEST_SOURCE",
    "Append",
    "CallSpec",
    "EventLog",
    "EventWriter",
    "SurfaceOp",
    "assistant_message",
    "event",
    "masked_result",
    "tool_message",
]
