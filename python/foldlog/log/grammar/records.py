"""The records of the log's one reader (`foldlog.log.grammar.reader`): one frozen dataclass per event
kind, each with the event's ``seq``, ``time`` and payload (``data``) and its typed fields; `Other`
for a kind this version does not know. Built by `reader.read` / `reader.record_of` only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from foldlog.log.grammar.types import ToolCall, Usage

#: a ``surfaceOp``: ``"append"`` or ``{"op": "fold" | "replace" | "insert" | "reset" | "mask", …}``
SurfaceOp = str | Mapping[str, Any]


# the readers' type checks: exact types first (what JSON decodes to), the ABC only after (slow)


def int_or_none(value: Any) -> int | None:
    return value if type(value) is int else None  # not a bool


def str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def map_or_none(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, dict) or isinstance(value, Mapping) else None


def op_kind(op: SurfaceOp | None) -> str | None:
    """The name of a surface op: ``"append"``, ``"fold"``, ``"replace"``, … (None: no op)."""
    if op is None or isinstance(op, str):
        return op
    name = op.get("op")
    return name if isinstance(name, str) else None


# --- the records --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SystemMessage:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    op: SurfaceOp
    content: Any


@dataclass(frozen=True, slots=True)
class UserMessage:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    op: SurfaceOp
    sources: Sequence[int]
    content: Any
    #: ``"meta"``, ``"observation"``, ``"output-retry"``, ``"compaction"`` (a digest), … or None
    source: str | None
    name: str | None

    @property
    def is_digest(self) -> bool:
        """A compaction's digest: the message a ``fold`` op put in place of what it folded."""
        return op_kind(self.op) == "fold"


@dataclass(frozen=True, slots=True)
class Reply:
    """An ``assistant/message``: the model's reply to one request (unless `is_request` is False:
    a repaired copy that replaces an earlier reply)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    op: SurfaceOp
    sources: Sequence[int]
    turn: int | None
    step: int | None
    message: Mapping[str, Any]
    content: Any
    reasoning: str | None
    calls: tuple[ToolCall, ...]
    #: the usage the provider reported (None: none recorded)
    usage: Usage | None
    #: the cost recorded when the reply came in (``{total, input, …, currency, source}``)
    cost: Mapping[str, Any] | None
    interrupted: bool
    #: the model of its request (module notes: the latest ``request/header`` before it)
    model: str | None
    #: the model that answered, when the log names it (``data.model``)
    answered: str | None

    @property
    def billed_model(self) -> str | None:
        """The model this request is priced as: the one that answered when the log names it, else
        the model of its request."""
        return self.answered if self.answered else self.model

    @property
    def is_request(self) -> bool:
        """Appended to the surface, so a request of its own (not a repaired copy)."""
        return self.op == "append"


@dataclass(frozen=True, slots=True)
class Call:
    """A ``tool/call``: the call the loop is about to run (the reply holds it too)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    step: int | None
    call_id: str | None
    name: str | None
    #: the model's raw JSON text
    arguments: str | None


@dataclass(frozen=True, slots=True)
class Result:
    """A ``tool/result``: a call's result, or (by its op) a pruned copy (``replace``), a masking
    stub (``mask``: `masked` holds ``{seq, tokens}``) or a placeholder of crash repair."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    op: SurfaceOp
    sources: Sequence[int]
    turn: int | None
    step: int | None
    message: Mapping[str, Any]
    call_id: str | None
    name: str | None
    content: Any
    is_error: bool
    #: what was done to the output to log it (``omittedBytes``, ``utf8Replaced``, ``elidedBytes``,
    #: ``subagent``): docs/log-format.md
    meta: Mapping[str, Any] | None
    masked: Mapping[str, Any] | None

    @property
    def elided_bytes(self) -> int | None:
        """Bytes compaction's prune cut from this copy (None: not a pruned copy)."""
        return int_or_none(self.meta.get("elidedBytes")) if self.meta is not None else None

    @property
    def subagent(self) -> Mapping[str, Any] | None:
        """``{session, spend}`` of the sub-agent a ``task`` call ran, if this result is one's."""
        return map_or_none(self.meta.get("subagent")) if self.meta is not None else None


@dataclass(frozen=True, slots=True)
class TurnStart:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None


@dataclass(frozen=True, slots=True)
class TurnEnd:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    #: the reason's ``kind`` (``completed``, ``aborted``, ``error``, ``budget``, …; None: none named)
    reason: str | None
    #: the whole reason (``{kind, message?, steps?, limit?, …}``)
    detail: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StepStart:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    step: int | None


@dataclass(frozen=True, slots=True)
class StepEnd:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    step: int | None


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """What the next requests are made with (written when it changes)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    model: str | None
    tools: Sequence[Any]
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Chunk:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    step: int | None
    chunk: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class OutputValidated:
    """A turn's validated typed answer (docs/output.md)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    step: int | None
    name: str | None
    mode: str | None
    retries: int | None
    value: Any


@dataclass(frozen=True, slots=True)
class CompactionStart:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    id: str | None
    trigger: str | None
    strategy: str | None
    focus: str | None


@dataclass(frozen=True, slots=True)
class CompactionSummary:
    """What a fold did (docs/compaction.md, "Recording"); its summary calls are requests
    (``requests`` of them, their summed `usage` and `cost`, or `counted_tokens` when the
    summariser reported no usage). The digest follows as a `UserMessage` (`UserMessage.is_digest`)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    id: str | None
    summary: str | None
    folded: Sequence[int] | None
    kept: Sequence[int] | None
    tokens_before: int | None
    tokens_after: int | None
    model: str | None
    mechanical: bool
    requests: int | None
    usage: Usage | None
    cost: Mapping[str, Any] | None
    counted_tokens: int | None


@dataclass(frozen=True, slots=True)
class CompactionEnd:
    seq: int
    time: int | None
    data: Mapping[str, Any]
    id: str | None
    #: why it failed (the surface is then as before it), None when it did not
    error: Any
    pruned: int | None
    masked: int | None
    skipped: Any


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """The calls of a step waiting for a person (docs/durable-runs.md)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    turn: int | None
    step: int | None
    #: ``{callId, name, arguments, question?}`` each
    calls: Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """A person's answer to a waiting call (`Session.approve` / `Session.deny`)."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    call_id: str | None
    approved: bool
    reason: str | None


@dataclass(frozen=True, slots=True)
class Erasure:
    """The content of ``seqs`` was erased (their data are tombstones now): why and when
    (docs/log-format.md, "Erasure"). Never the erased content."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    seqs: Sequence[int]
    reason: str | None
    #: when it was erased, epoch milliseconds
    at: int | None


@dataclass(frozen=True, slots=True)
class Other:
    """An event of a kind this reader does not know (a newer writer's ``ignorable`` kind, an
    importer's): passed through as it is."""

    seq: int
    time: int | None
    data: Mapping[str, Any]
    type: str
    op: SurfaceOp | None


Record = (
    SystemMessage
    | UserMessage
    | Reply
    | Call
    | Result
    | TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | RequestHeader
    | Chunk
    | OutputValidated
    | CompactionStart
    | CompactionSummary
    | CompactionEnd
    | ApprovalRequest
    | ApprovalAnswer
    | Erasure
    | Other
)
#: the records of the events on the surface (what `derive_messages` projects)
MessageRecord = SystemMessage | UserMessage | Reply | Result


__all__ = [
    "ApprovalAnswer",
    "ApprovalRequest",
    "Call",
    "Chunk",
    "CompactionEnd",
    "CompactionStart",
    "CompactionSummary",
    "Erasure",
    "MessageRecord",
    "Other",
    "OutputValidated",
    "Record",
    "Reply",
    "RequestHeader",
    "Result",
    "StepEnd",
    "StepStart",
    "SurfaceOp",
    "SystemMessage",
    "TurnEnd",
    "TurnStart",
    "UserMessage",
    "op_kind",
]
