"""The lazy derived-message sequence (issue 17.1): `derive_messages()` behaves as an immutable
sequence of messages, and what only needs counts, plans or request bytes never builds a message.

Message objects are counted directly: every message (and every nested mapping) a session hands
out is a `FrozenDict`, so the number of live `FrozenDict` instances tells whether any was built.
Each counting test first checks that the count does move when one message is read, so a counter
that could not see them would fail here rather than pass silently.
"""

from __future__ import annotations

import gc
import json
from typing import Any

import pytest

from foldlog import Session
from foldlog.errors import ImmutableHistoryError, MessageIndexError
from foldlog.log.frozen import FrozenDict, MessageSequence
from foldlog.log.wire import chunked_body
from tests.support.history import add_tool_steps

MODEL = "deepseek-chat"  # an exact tokenizer: the counts are kept with the events


def _frozen_dicts() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if type(o) is FrozenDict)


def _session(steps: int = 50) -> Session:
    s = Session(system="You are terse.")
    s.model = MODEL
    add_tool_steps(
        s,
        steps,
        user="read the files",
        tool="read",
        arguments=lambda k: f'{{"n": {k}}}',
        result=lambda k: f"text {k}",
    )
    return s


def _plain(s: Session) -> list[dict[str, Any]]:
    """The history as plain dicts, through JSON (no frozen object survives)."""
    return json.loads(json.dumps(list(s.derive_messages())))  # type: ignore[no-any-return]


def test_length_indexing_and_negative_indexes() -> None:
    s = _session(3)
    msgs = s.derive_messages()
    plain = _plain(s)
    assert isinstance(msgs, MessageSequence) and len(msgs) == len(plain) == 9
    for i in range(-len(plain), len(plain)):
        assert msgs[i] == plain[i], i
    assert msgs[-1] == {"role": "assistant", "content": "done"}
    assert msgs[0]["role"] == "system"
    assert msgs[-1] is msgs[len(msgs) - 1], "one message, one object, whichever index reads it"
    for bad in (len(plain), -len(plain) - 1):
        with pytest.raises(MessageIndexError, match="out of range"):
            msgs[bad]
    with pytest.raises(IndexError):  # the error is also the built-in one
        msgs[100]


def test_slicing_gives_views_that_index_like_lists() -> None:
    s = _session(5)
    msgs = s.derive_messages()
    plain = _plain(s)
    for sl in (
        slice(2, 6),
        slice(-4, None),
        slice(None, -3),
        slice(5, 2),
        slice(-100, 100),
        slice(1, None, 2),
    ):
        part = msgs[sl]
        assert part == plain[sl], sl
        assert len(part) == len(plain[sl]), sl
    view = msgs[3:9]
    assert isinstance(view, MessageSequence), "a step-1 slice is a view, not a copy"
    assert view[0] is msgs[3] and view[-1] is msgs[8]
    assert view[1:3] == plain[4:6], "a slice of a slice counts from its own start"
    with pytest.raises(MessageIndexError):
        view[6]


def test_iteration_and_equality_with_lists_and_tuples() -> None:
    s = _session(4)
    msgs = s.derive_messages()
    plain = _plain(s)
    assert list(msgs) == plain
    assert [m["role"] for m in msgs] == [m["role"] for m in plain]
    assert msgs == plain and plain == msgs
    assert msgs == tuple(plain)
    assert msgs == s.derive_messages(), "two views of the same history are equal"
    assert msgs != plain[:-1] and msgs != [*plain[:-1], {"role": "assistant", "content": "other"}]
    assert not (msgs == "not a sequence of messages")
    with pytest.raises(TypeError):
        hash(msgs)


def test_iteration_crosses_the_chunks_it_builds_items_in() -> None:
    s = Session(system="s")
    for i in range(MessageSequence.CHUNK * 2 + 5):
        s.add({"role": "user", "content": f"m{i}"})
    msgs = s.derive_messages()
    contents = [m["content"] for m in msgs]
    assert contents == ["s", *(f"m{i}" for i in range(MessageSequence.CHUNK * 2 + 5))]
    assert [m["content"] for m in msgs[MessageSequence.CHUNK - 1 : MessageSequence.CHUNK + 2]] == [
        f"m{i}" for i in range(MessageSequence.CHUNK - 2, MessageSequence.CHUNK + 1)
    ]


def test_the_sequence_and_its_items_refuse_changes() -> None:
    s = _session(2)
    msgs = s.derive_messages()
    seq: Any = msgs
    with pytest.raises(TypeError):
        seq[0] = {"role": "user", "content": "x"}
    with pytest.raises(TypeError):
        del seq[0]
    with pytest.raises(AttributeError):
        seq.append({"role": "user", "content": "x"})
    item: Any = msgs[2]  # an assistant message with a tool call
    with pytest.raises(ImmutableHistoryError):
        item["content"] = "changed"
    with pytest.raises(ImmutableHistoryError):
        item.pop("content")
    with pytest.raises(ImmutableHistoryError):
        item["tool_calls"].append({})
    with pytest.raises(ImmutableHistoryError):
        item["tool_calls"][0]["function"]["name"] = "other"
    assert s.derive_messages() == msgs and msgs[2]["tool_calls"][0]["function"]["name"] == "read"


def test_counting_planning_and_request_bodies_build_no_message() -> None:
    s = _session(50)
    base = _frozen_dicts()
    msgs = s.derive_messages()
    assert len(msgs) == 103 and _frozen_dicts() == base, "taking the sequence builds nothing"
    count = s.token_count(MODEL)
    assert count > 0 and count.exact
    assert s.token_counts(MODEL) is not None
    plan = s.plan_history(MODEL)
    assert plan is not None
    wire = s.wire_request("keep")
    assert len(wire.messages) == 103
    body = chunked_body(wire, {"model": MODEL, "stream": True}).to_bytes()
    assert _frozen_dicts() == base, "counts, plans and request bodies built message objects"
    # the counter sees messages when they are built: reading one makes at least one
    first = msgs[1]
    assert first["role"] == "user" and _frozen_dicts() > base
    assert json.loads(body)["messages"] == _plain(s), "the body holds the whole history"


def test_a_reloaded_session_counts_and_builds_bodies_without_building_messages() -> None:
    s = _session(20)
    s.token_count(MODEL)
    again = Session.from_bytes(s._core.to_bytes())
    again.model = MODEL
    base = _frozen_dicts()
    assert again.token_count(MODEL) == s.token_count(MODEL)
    again.plan_history(MODEL)
    body = chunked_body(again.wire_request("strip"), {"model": MODEL}).to_bytes()
    assert len(json.loads(body)["messages"]) == len(s.derive_messages())
    assert _frozen_dicts() == base
