"""The log's one typed reader (`foldlog.log.grammar.reader`): a record per kind, the request model
rule, unknown kinds kept, a fold read back, and the same records from a `Session` as from dicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from foldlog import Session
from foldlog.log.grammar import kinds
from foldlog.log.grammar.reader import (
    Call,
    Chunk,
    CompactionEnd,
    CompactionStart,
    CompactionSummary,
    Other,
    OutputValidated,
    ReadState,
    Record,
    Reply,
    RequestHeader,
    Result,
    StepEnd,
    StepStart,
    SystemMessage,
    TurnEnd,
    TurnStart,
    UserMessage,
    latest_model,
    op_kind,
    read,
    record_of,
)
from foldlog.log.grammar.types import ToolCall, Usage
from foldlog.log.grammar.writer import EventWriter, assistant_message

USAGE = {
    "promptTokens": 120,
    "completionTokens": 30,
    "cacheHitTokens": 100,
    "cacheMissTokens": 20,
    "reasoningTokens": 5,
}


def events(
    *items: tuple[str, Mapping[str, Any]] | tuple[str, Mapping[str, Any], Any],
) -> list[dict[str, Any]]:
    """Event dicts in seq order, one second apart: ``(type, data[, surfaceOp])``."""
    out = []
    for seq, item in enumerate(items):
        event: dict[str, Any] = {
            "type": item[0],
            "seq": seq,
            "time": 1_000 * (seq + 1),
            "data": dict(item[1]),
        }
        if len(item) == 3:
            event["surfaceOp"] = item[2]
        out.append(event)
    return out


def reply(model: str | None = None, **extra: Any) -> tuple[str, Mapping[str, Any], str]:
    data: dict[str, Any] = {"turn": 1, "step": 1, "message": {"role": "assistant", "content": "ok"}, **extra}
    if model is not None:
        data["model"] = model
    return (kinds.ASSISTANT_MESSAGE, data, "append")


def header(model: Any) -> tuple[str, Mapping[str, Any]]:
    return (kinds.REQUEST_HEADER, {"model": model, "tools": [], "params": {"max_tokens": 64}})


def replies(records: Sequence[Record]) -> list[Reply]:
    return [r for r in records if isinstance(r, Reply)]


def test_every_kind_has_its_record() -> None:
    log = events(
        (kinds.SYSTEM_MESSAGE, {"content": "be brief"}, "append"),
        (kinds.TURN_START, {"turn": 1}),
        (kinds.USER_MESSAGE, {"role": "user", "content": "hi", "source": "meta", "name": "ann"}, "append"),
        (kinds.STEP_START, {"turn": 1, "step": 1}),
        (kinds.REQUEST_HEADER, {"model": "m-1", "tools": [{"name": "read"}], "params": {"temperature": 0.5}}),
        (kinds.ASSISTANT_CHUNK, {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": "o"}}),
        (
            kinds.ASSISTANT_MESSAGE,
            {
                "turn": 1,
                "step": 1,
                "message": assistant_message("", reasoning="think", calls=[("c1", "read", '{"p": 1}')]),
                "usage": USAGE,
                "cost": {"total": 0.5, "currency": "USD"},
                "interrupted": True,
            },
            "append",
        ),
        (kinds.TOOL_CALL, {"turn": 1, "step": 1, "callId": "c1", "name": "read", "arguments": '{"p": 1}'}),
        (
            kinds.TOOL_RESULT,
            {
                "turn": 1,
                "step": 1,
                "message": {
                    "role": "tool",
                    "toolCallId": "c1",
                    "toolName": "read",
                    "content": "x",
                    "isError": True,
                },
                "meta": {"omittedBytes": 3, "subagent": {"session": "child", "spend": {}}},
            },
            "append",
        ),
        (kinds.STEP_END, {"turn": 1, "step": 1}),
        (
            kinds.OUTPUT_VALIDATED,
            {"turn": 1, "step": 1, "name": "Answer", "mode": "tool", "retries": 2, "value": [1]},
        ),
        (kinds.TURN_END, {"turn": 1, "reason": {"kind": "max-steps", "steps": 4}}),
    )
    recs = list(read(log))
    assert [type(r) for r in recs] == [
        SystemMessage,
        TurnStart,
        UserMessage,
        StepStart,
        RequestHeader,
        Chunk,
        Reply,
        Call,
        Result,
        StepEnd,
        OutputValidated,
        TurnEnd,
    ]
    assert [(r.seq, r.time) for r in recs] == [(i, 1_000 * (i + 1)) for i in range(len(log))]
    system, start, user, step, head, chunk, answer, call, result, step_end, output, end = recs
    assert isinstance(system, SystemMessage) and system.content == "be brief" and system.op == "append"
    assert isinstance(start, TurnStart) and start.turn == 1
    assert isinstance(user, UserMessage)
    assert (user.content, user.source, user.name, user.is_digest) == ("hi", "meta", "ann", False)
    assert isinstance(step, StepStart) and (step.turn, step.step) == (1, 1)
    assert isinstance(head, RequestHeader)
    assert (head.model, head.tools, head.params) == ("m-1", [{"name": "read"}], {"temperature": 0.5})
    assert isinstance(chunk, Chunk) and chunk.chunk == {"type": "text-delta", "text": "o"}
    assert isinstance(answer, Reply)
    assert (answer.turn, answer.step, answer.content, answer.reasoning) == (1, 1, "", "think")
    assert answer.calls == (ToolCall("c1", "read", '{"p": 1}'),)
    assert answer.usage == Usage(120, 30, 100, 20, 5)
    assert answer.cost == {"total": 0.5, "currency": "USD"}
    assert answer.interrupted and answer.is_request
    assert (answer.model, answer.answered, answer.billed_model) == ("m-1", None, "m-1")
    assert isinstance(call, Call)
    assert (call.turn, call.step, call.call_id, call.name, call.arguments) == (1, 1, "c1", "read", '{"p": 1}')
    assert isinstance(result, Result)
    assert (result.call_id, result.name, result.content, result.is_error) == ("c1", "read", "x", True)
    assert result.meta is not None and result.meta["omittedBytes"] == 3
    assert result.subagent == {"session": "child", "spend": {}}
    assert result.elided_bytes is None and result.masked is None
    assert isinstance(step_end, StepEnd) and (step_end.turn, step_end.step) == (1, 1)
    assert isinstance(output, OutputValidated)
    assert (output.name, output.mode, output.retries, output.value) == ("Answer", "tool", 2, [1])
    assert isinstance(end, TurnEnd)
    assert (end.turn, end.reason, end.detail) == (1, "max-steps", {"kind": "max-steps", "steps": 4})


def test_no_kind_of_the_grammar_is_read_as_unknown() -> None:
    for kind in kinds.ALL_KINDS:
        record = record_of({"type": kind, "seq": 0, "time": 1, "data": {}})
        assert not isinstance(record, Other), kind


def test_the_model_of_a_request_is_its_latest_header_s() -> None:
    log = events(reply(), header("m-1"), reply(), reply(), header("m-2"), reply(), header(None), reply())
    got = [(r.seq, r.model) for r in replies(list(read(log)))]
    # before any header: unknown; a header without a model makes the model unknown again
    assert got == [(0, None), (2, "m-1"), (3, "m-1"), (5, "m-2"), (7, None)]


def test_a_session_without_a_header_reads_the_model_it_was_started_with() -> None:
    log = events(reply(), reply("answering-model"))
    first, second = replies(list(read(log, model="default-model")))
    assert (first.model, first.answered, first.billed_model) == ("default-model", None, "default-model")
    # the model that answered, when the log names it, is the one the request is billed as
    assert (second.model, second.answered, second.billed_model) == (
        "default-model",
        "answering-model",
        "answering-model",
    )
    # a header takes over from the starting model
    (later,) = replies(list(read(events(header("m-3"), reply()), model="default-model")))
    assert later.model == "m-3"


def test_record_of_carries_the_request_model_from_event_to_event() -> None:
    log = events(header("m-1"), reply(), header("m-2"), reply())
    state = ReadState()
    one_by_one = [record_of(event, state) for event in log]
    assert one_by_one == list(read(log))
    assert state.model == "m-2"
    # a reading that carries on from a state
    carried = ReadState("m-9")
    assert [r.model for r in replies(list(read(events(reply()), state=carried)))] == ["m-9"]
    # without a state a reply's request model is unknown
    assert isinstance(r := record_of(log[1]), Reply) and r.model is None


def test_unknown_kinds_are_kept_with_their_data() -> None:
    log = events(
        ("note/added", {"text": "a newer writer's kind"}),
        reply(),
        ("importer/thing", {"k": 1}, {"op": "insert", "after": 0}),
    )
    recs = list(read(log))
    assert len(recs) == 3
    note, _, thing = recs
    assert isinstance(note, Other) and (note.type, note.data, note.op) == ("note/added", log[0]["data"], None)
    assert isinstance(thing, Other) and thing.seq == 2 and thing.op == {"op": "insert", "after": 0}
    assert op_kind(thing.op) == "insert"


def test_a_repaired_copy_of_a_reply_is_not_a_request() -> None:
    log = events(reply(), (kinds.ASSISTANT_MESSAGE, reply()[1], {"op": "replace", "start": 0, "end": 0}))
    assert [r.is_request for r in replies(list(read(log)))] == [True, False]


def test_calls_in_the_flat_shape_and_arguments_that_are_not_text() -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "a", "name": "flat", "arguments": "{}"},
            {"id": "b", "type": "function", "function": {"name": "obj", "arguments": {"x": 1}}},
            "not a call",
        ],
    }
    (r,) = replies(list(read(events((kinds.ASSISTANT_MESSAGE, {"message": message}, "append")))))
    assert r.calls == (ToolCall("a", "flat", "{}"), ToolCall("b", "obj", '{"x": 1}'))
    assert r.usage is None and r.cost is None and r.turn is None


def _folded_session() -> Session:
    s = Session("sys")
    w = EventWriter.on(s)
    w.request_header({"model": "m-1", "tools": [], "params": {}})
    w.turn_start(1)
    w.user({"role": "user", "content": "read a.py"})
    w.step_start(1, 1)
    w.assistant(1, 1, assistant_message("", calls=[("c1", "read", "{}")]), usage=USAGE)
    w.tool_call(1, 1, "c1", "read", "{}")
    w.tool_result(1, 1, "c1", "read", "x" * 50, False, call_seq=6)
    w.step_end(1, 1)
    w.turn_end(1, "completed")
    w.compaction_start("compaction-1", "manual", strategy="summary")
    w.replaced_result(
        7,
        {
            "turn": 1,
            "step": 1,
            "message": {
                "role": "tool",
                "toolCallId": "c1",
                "toolName": "read",
                "content": "x",
                "isError": False,
            },
            "meta": {"elidedBytes": 49},
        },
    )
    w.compaction_summary(
        "compaction-1",
        "read a.py",
        [3, 5, 11],
        [],
        mechanical=False,
        tokens_before=900,
        tokens_after=100,
        model="summariser",
        extra={"requests": 2, "usage": USAGE, "countedTokens": 7},
    )
    w.digest("read a.py", [3, 5, 11])
    w.compaction_end("compaction-1", pruned=1)
    return s


def test_a_fold_reads_back_as_its_records() -> None:
    s = _folded_session()
    recs = list(read(s.events))
    assert [r.seq for r in recs] == list(range(len(s.events)))
    start, pruned, summary, digest, end = recs[-5:]
    assert isinstance(start, CompactionStart)
    assert (start.id, start.trigger, start.strategy, start.focus) == (
        "compaction-1",
        "manual",
        "summary",
        None,
    )
    assert isinstance(pruned, Result) and op_kind(pruned.op) == "replace" and pruned.elided_bytes == 49
    assert list(pruned.sources) == [7]
    assert isinstance(summary, CompactionSummary)
    assert (summary.id, summary.summary, summary.folded, summary.kept) == (
        "compaction-1",
        "read a.py",
        [3, 5, 11],
        [],
    )
    assert (summary.tokens_before, summary.tokens_after, summary.model, summary.mechanical) == (
        900,
        100,
        "summariser",
        False,
    )
    assert (summary.requests, summary.usage, summary.counted_tokens, summary.cost) == (
        2,
        Usage(120, 30, 100, 20, 5),
        7,
        None,
    )
    assert isinstance(digest, UserMessage) and digest.is_digest and digest.source == "compaction"
    assert digest.op == {"op": "fold", "start": 3, "end": 11, "keep": []} and list(digest.sources) == [
        3,
        5,
        11,
    ]
    assert isinstance(end, CompactionEnd) and (end.id, end.error, end.pruned, end.masked) == (
        "compaction-1",
        None,
        1,
        None,
    )
    (answer,) = replies(recs)
    assert answer.model == "m-1" and answer.usage == Usage(120, 30, 100, 20, 5)


def test_a_session_reads_as_its_events_do() -> None:
    s = _folded_session()
    # the session's fast path (plain decodings, not frozen copies) gives the records of its events
    assert list(read(s.events)) == list(read(list(s.events)))
    first = next(iter(read(s.events)))
    assert isinstance(first, SystemMessage) and type(first.data) is dict


def test_a_masking_stub_says_what_it_masked() -> None:
    data = {
        "turn": 1,
        "step": 1,
        "masked": {"seq": 7, "tokens": 1234},
        "message": {"role": "tool", "toolCallId": "c1", "toolName": "read", "content": "[masked: …]"},
    }
    (stub,) = read(events((kinds.TOOL_RESULT, data, {"op": "mask", "seq": 7})))
    assert (
        isinstance(stub, Result) and stub.masked == {"seq": 7, "tokens": 1234} and op_kind(stub.op) == "mask"
    )
    assert stub.is_error is False and stub.meta is None


def test_malformed_values_read_as_unknown_not_as_errors() -> None:
    log: list[dict[str, Any]] = [
        {"type": kinds.TURN_END, "seq": True, "time": "noon", "data": {"turn": "1", "reason": "done"}},
        {"type": kinds.ASSISTANT_MESSAGE, "data": "not an object", "surfaceOp": "append"},
        {"data": {}},
    ]
    end, answer, untyped = read(log)
    assert isinstance(end, TurnEnd) and (end.seq, end.time, end.turn, end.reason, end.detail) == (
        -1,
        None,
        None,
        None,
        {},
    )
    assert (
        isinstance(answer, Reply) and answer.message == {} and answer.content is None and answer.usage is None
    )
    assert isinstance(untyped, Other) and untyped.type == "None"


@pytest.mark.parametrize("as_session", [False, True])
def test_latest_model_reads_backwards(as_session: bool) -> None:
    log = events(header("m-1"), reply("answered-1"), header(""), reply())
    source: Sequence[Mapping[str, Any]] = log
    if as_session:
        s = Session()
        for event in log:
            s.append_event(event["type"], event["data"], surface_op=event.get("surfaceOp"))
        source = s.events
    # an empty model names none: the latest header naming one
    assert latest_model(source) == "m-1"
    assert latest_model(source, answered=True) == "answered-1"
    assert latest_model(source[:0] if not as_session else Session().events) is None
