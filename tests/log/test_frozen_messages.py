"""What reading a message hands out, whichever way the core built it (straight from its line for
the common text and tool-call forms, through the projected JSON value for the others): the
message as recorded, a tracked read-only dict whose nested dicts and lists are read-only and left
out of the cyclic GC, and the GC as the caller had it."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.log.frozen import FrozenDict, FrozenList
from tests.support.history import tool_call

IMAGE = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
BLOCKS = [{"type": "text", "text": "a"}, IMAGE]


def _messages(k: int) -> list[dict[str, Any]]:
    """One of each form: text, escapes, a named user, calls, reasoning, a failed result, blocks."""
    return [
        {"role": "user", "content": f'question {k}: caf\u00e9 "quoted"\n\\ end', "name": "ann"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "because",
            "tool_calls": [tool_call(f"c{k}", "read", '{"path": "a\\"b"}'), tool_call(f"d{k}", "ls")],
        },
        {"role": "tool", "tool_call_id": f"c{k}", "name": "read", "is_error": True, "content": "none"},
        {"role": "tool", "tool_call_id": f"d{k}", "name": "ls", "content": BLOCKS},
        {"role": "assistant", "content": f"answer {k}"},
    ]


def _loaded(tmp_path: Path, rounds: int) -> tuple[Session, list[dict[str, Any]]]:
    s = Session(system="You are terse.")
    expected: list[dict[str, Any]] = [{"role": "system", "content": "You are terse."}]
    for k in range(rounds):
        for m in _messages(k):
            s.add(m)
            expected.append(m)
    path = tmp_path / "log.jsonl"
    s.save(path)
    return Session.load(path), expected


def _check_nested(v: Any) -> None:
    if isinstance(v, dict):
        assert type(v) is FrozenDict and not gc.is_tracked(v)
        for x in v.values():
            _check_nested(x)
    elif isinstance(v, list):
        assert type(v) is FrozenList and not gc.is_tracked(v)
        for x in v:
            _check_nested(x)


@pytest.mark.parametrize("rounds", [1, 40])  # a few messages, and more than are read in parallel
def test_read_messages_are_the_recorded_ones_frozen(tmp_path: Path, rounds: int) -> None:
    s, expected = _loaded(tmp_path, rounds)
    got = list(s.derive_messages())
    assert got == expected
    assert [list(m) for m in got] == [list(m) for m in expected]  # the same key order
    for m in got:
        assert type(m) is FrozenDict and gc.is_tracked(m)
        for v in m.values():
            _check_nested(v)
    assert got[3]["is_error"] is True
    assert list(s.derive_messages()) == got  # read again: the same objects
    assert all(a is b for a, b in zip(s.derive_messages(), got, strict=True))


def test_reading_messages_leaves_the_gc_as_it_was(tmp_path: Path) -> None:
    s, _ = _loaded(tmp_path, 40)
    assert gc.isenabled()
    list(s.derive_messages()[:100])
    assert gc.isenabled()
    gc.disable()
    try:
        list(s.derive_messages())
        assert not gc.isenabled()
    finally:
        gc.enable()
