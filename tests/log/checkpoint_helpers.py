"""What the checkpoint tests of every store share: a session's turns, and the comparison of a
session opened from a checkpoint with the same log loaded whole."""

from __future__ import annotations

from foldlog import Session

MODEL = "gpt-4o"


def add_turns(s: Session, first: int, count: int) -> None:
    """Turns ``first``… of a question, a tool call, its result and an answer."""
    for t in range(first, first + count):
        s.add({"role": "user", "content": f"question {t}"})
        call = {"id": f"c{t}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        s.add({"role": "assistant", "content": "", "tool_calls": [call]})
        s.add({"role": "tool", "tool_call_id": f"c{t}", "content": f"result {t}"})
        s.add({"role": "assistant", "content": f"answer {t}"})


def assert_same_ready_state(a: Session, b: Session) -> None:
    """What ``a`` derives, counts, plans and sends is what ``b`` does."""
    assert a.wire_json() == b.wire_json()
    assert list(a.derive_messages()) == list(b.derive_messages())
    assert a.surface_nodes() == b.surface_nodes()
    assert a.plan_history(MODEL).tokens() == b.plan_history(MODEL).tokens()
    assert (len(a), a.rewrite_version, a.open_turn, a.last_turn) == (
        len(b),
        b.rewrite_version,
        b.open_turn,
        b.last_turn,
    )
