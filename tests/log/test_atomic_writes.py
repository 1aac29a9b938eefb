"""All-or-nothing writes (issue 14, item 3): `replace`, `add`, `append_event`, `append_events`
and the importers' writer check everything before they change anything; on error the events,
the derived messages, `rewrite_version` and subscribers are untouched."""

from __future__ import annotations

import copy
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from foldlog import InvalidEventError, Session, _core
from foldlog.interchange import convert
from foldlog.interchange.writer import write_conversation
from foldlog.log.frozen import MessageSequence
from foldlog.log.media import resolving

MODEL = "deepseek-v4-flash"
ESTIMATED = "llama-3-8b"  # no exact tokenizer: the calibrated estimate


def state(s: Session) -> tuple[Any, ...]:
    return (len(s), [dict(e) for e in s.events], s.derive_messages(), s.rewrite_version, s.surface_seqs())


def test_a_refused_replace_changes_nothing() -> None:
    s = Session(system="old")
    s.add({"role": "user", "content": "a"})
    seen: list[Any] = []
    s.stream.subscribe(seen.append)
    before = state(s)
    with pytest.raises(InvalidEventError, match=r"replace\(\): messages\[2\]") as err:
        s.replace(
            [
                {"role": "system", "content": "new"},
                {"role": "user", "content": "kept"},
                {"role": "user", "content": math.nan},
            ]
        )
    assert err.value.index == 2  # type: ignore[attr-defined]
    with pytest.raises(InvalidEventError, match=r"replace\(\): message 1: invalid user message: content"):
        s.replace([{"role": "system", "content": "new"}, {"role": "user", "content": None}])
    assert state(s) == before
    assert seen == [], "subscribers saw nothing"
    s.replace([{"role": "system", "content": "new"}, {"role": "user", "content": "kept"}])
    assert [m["content"] for m in s.derive_messages()] == ["new", "kept"]
    assert s.rewrite_version == before[3] + 1 and len(seen) == 2


def test_a_refused_add_or_append_event_changes_nothing() -> None:
    s = Session(system="s")
    s.add({"role": "user", "content": "hi"})
    s.append_event(
        "assistant/message",
        {
            "turn": 1,
            "step": 1,
            "message": {"role": "assistant", "content": "yo"},
            "usage": {"promptTokens": 10},
        },
        surface_op="append",
    )
    s.add({"role": "user", "content": "more"})
    # the usage a reply reports calibrates the estimate of models without an exact tokenizer
    estimate = s.token_count(ESTIMATED)
    before = state(s)
    for bad in (
        {"role": "user", "content": 42},
        {"role": "user", "content": {"text": "a dict"}},
        {"role": "assistant", "content": "x", "tool_calls": "nope"},
        {"role": "user", "content": [1, 2]},
    ):
        with pytest.raises(InvalidEventError):
            s.add(bad)
    usage = {"promptTokens": 99_999}
    for data in (
        {"turn": 1, "step": 2, "message": {"role": "assistant", "content": math.inf}, "usage": usage},
        {"turn": 1, "step": 2, "message": {"role": "assistant", "content": 7}, "usage": usage},
    ):
        with pytest.raises(InvalidEventError):
            s.append_event("assistant/message", data, surface_op="append")
    assert state(s) == before
    assert s.token_count(ESTIMATED) == estimate, "the usage of a refused reply is not noted"


def test_append_events_is_all_or_nothing() -> None:
    s = Session(system="s")
    before = state(s)
    batch: list[dict[str, Any]] = [
        {"type": "turn/start", "data": {"turn": 1}},
        {"type": "user/message", "data": {"role": "user", "content": "a"}, "surfaceOp": "append"},
        {
            "type": "user/message",
            "data": {"role": "user", "content": "b"},
            "surfaceOp": {"op": "replace", "start": 2, "end": 2},
            "sourceEventSeqs": [2],
        },
        {
            "type": "user/message",
            "data": {"role": "user", "content": "c"},
            "surfaceOp": {"op": "insert", "after": 2},
        },
    ]
    with pytest.raises(InvalidEventError, match="not on the surface") as err:
        s.append_events(batch)
    assert err.value.index == 3  # type: ignore[attr-defined]
    assert state(s) == before
    assert s.append_events(batch[:3]) == [1, 2, 3]
    assert [m["content"] for m in s.derive_messages()] == ["s", "b"]


def test_the_importers_writer_is_all_or_nothing() -> None:
    shared = Path(os.environ.get("FOLDLOG_SHARED") or Path(__file__).resolve().parents[3] / "shared")
    source = shared / "corpus/claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    assert source.is_file(), f"{source} is missing: tests read the shared corpus (FOLDLOG_SHARED)"
    (conv,) = convert("claude-code", source)
    bad = copy.deepcopy(conv)
    index = max(i for i, ev in enumerate(bad.events) if ev.type == "tool/result")
    bad.events[index].data["message"]["content"] = None
    s = Session(system="kept")
    before = state(s)
    with pytest.raises(
        InvalidEventError,
        match=rf"imported event {index} \(tool/result\) \(source line \d+\): .*message.content",
    ):
        write_conversation(bad, s)
    assert state(s) == before
    assert write_conversation(conv, s) == len(conv.events)
    assert len(s) == 1 + len(conv.events)


# --- the property: after any sequence of calls, the session equals its log on disk ---------

SURROGATES: tuple[Literal["Cs"]] = ("Cs",)
TEXT = st.text(st.characters(codec="utf-8", exclude_categories=SURROGATES), max_size=6)
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
CALL = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}

valid_messages = st.one_of(
    TEXT.map(lambda t: {"role": "user", "content": t}),
    TEXT.map(lambda t: {"role": "user", "content": [{"type": "text", "text": t}, IMAGE]}),
    TEXT.map(lambda t: {"role": "assistant", "content": t}),
    st.just({"role": "assistant", "content": None, "tool_calls": [CALL]}),
    TEXT.map(lambda t: {"role": "tool", "tool_call_id": "c1", "name": "ls", "content": t}),
    TEXT.map(lambda t: {"role": "system", "content": t}),
)
invalid_messages = st.sampled_from(
    [
        {"role": "user", "content": 42},
        {"role": "user", "content": None},
        {"role": "user", "content": {"a": 1}},
        {"role": "user", "content": [1, 2]},
        {"role": "user", "content": [{"type": 3}]},
        {"role": "assistant", "content": "x", "tool_calls": "nope"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]},
        {"role": "tool", "content": "no id"},
        {"role": "robot", "content": "x"},
        {"role": "user", "content": math.nan},
        {"role": "user", "content": "x", 1: "non-string key"},
    ]
)
messages = st.one_of(valid_messages, invalid_messages)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(["add", "replace", "append_event", "append_events"]))
    if kind == "add":
        return kind, draw(messages)
    if kind == "replace":
        return kind, draw(st.lists(messages, max_size=3))
    event = st.one_of(
        st.just(("turn/start", {"turn": 1}, None, None)),
        messages.map(lambda m: ("user/message", m, "append", None)),
        messages.map(lambda m: ("assistant/message", {"turn": 1, "step": 1, "message": m}, "append", None)),
        st.tuples(st.integers(0, 12), st.integers(0, 12)).map(
            lambda se: (
                "user/message",
                {"role": "user", "content": "r"},
                {"op": "replace", "start": se[0], "end": se[1]},
                list(range(se[0], se[1] + 1)),
            )
        ),
        st.integers(0, 30).map(lambda k: ("tool/call", {"callId": "c1"}, None, [k])),
        st.just(("no/such/type", {}, None, None)),
    )
    if kind == "append_event":
        return kind, draw(event)
    return kind, draw(st.lists(event, max_size=3))


def apply(s: Session, call: tuple[str, Any]) -> None:
    kind, arg = call
    if kind == "add":
        s.add(arg)
    elif kind == "replace":
        s.replace(arg)
    elif kind == "append_event":
        type_, data, op, sources = arg
        s.append_event(type_, data, surface_op=op, source_event_seqs=sources)
    else:
        s.append_events(
            [{"type": t, "data": d, "surfaceOp": op, "sourceEventSeqs": src} for t, d, op, src in arg]
        )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(calls(), min_size=1, max_size=12))
def test_any_sequence_of_writes_leaves_the_session_equal_to_its_log(sequence: list[tuple[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "s.jsonl"
        s = Session.open(p, system="sys", durability="none")
        s.model = MODEL  # flushes count (images included) and keep the counts in the lines
        try:
            for call in sequence:
                try:
                    apply(s, call)
                except InvalidEventError:
                    pass
                s.flush()
                disk, info = _core.Log.read_file(p)  # as stored, without the load repair
                assert info["torn"] is None
                n = len(s)
                assert len(disk) == n
                assert disk.events(0, n) == s._core.events(0, n)
                # the stored log's messages, their media references read from the media store
                stored = resolving(MessageSequence(disk.derived()), s.media, s.id)
                assert list(stored)[:n] == list(s.derive_messages())
                assert disk.rewrite_version == s.rewrite_version
        finally:
            s.close()
