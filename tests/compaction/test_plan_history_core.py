"""`Session.plan_history()` builds the planner's input in the core, without Python messages: it
must hold exactly the facts `planning.build_history(derive_messages(), token_counts())` extracts
in Python, on real transcripts and on every text rule's edge cases, and plan the same."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog import Session, planning
from test_wire_body import CORPUS, corpus_session, fold_middle

MODEL = "deepseek-v4-flash"
SETTINGS: dict[str, Any] = {"context_window": 20_000, "tail_tokens": 4_000}


def python_columns(s: Session, model: str = MODEL) -> tuple[Any, ...]:
    counts = s.token_counts(model)
    assert counts is not None
    return planning.build_history(s.derive_messages(), counts).columns()


def assert_same(s: Session) -> None:
    core = s.plan_history(MODEL)
    assert core is not None
    assert core.columns() == python_columns(s)
    python = planning.build_history(s.derive_messages(), s.token_counts(MODEL) or [])
    for force in (False, True):
        a, b = core.plan(**SETTINGS, force=force), python.plan(**SETTINGS, force=force)
        assert (a.head, a.tail_start, a.kept, a.fold, a.tokens_before, a.fold_tokens) == (
            b.head,
            b.tail_start,
            b.kept,
            b.fold,
            b.tokens_before,
            b.fold_tokens,
        )


@pytest.mark.parametrize(("fmt", "parts"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_sessions_plan_the_same_from_the_core(fmt: str, parts: tuple[str, str]) -> None:
    s = corpus_session(fmt, parts)
    assert_same(s)
    fold_middle(s)  # a digest on the surface
    assert_same(s)
    # a reload reads the counts kept in the log and still gives the same facts
    s.model = MODEL
    s2 = Session.from_bytes(s._core.to_bytes())
    assert_same(s2)


def call(cid: Any, name: str = "bash") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_every_text_rule_matches_the_python_rules() -> None:
    s = Session(system="sys")
    s.append_event("system/message", {"role": "developer", "content": "dev"}, surface_op="append")
    for text in (
        "<compaction-summary>d</compaction-summary>",
        "  \n\t<COMPACTION-SUMMARY>upper, after whitespace",
        "\x1c\x1f<compaction-summary>after Python-only whitespace",
        "[[KEEP]] keep me",
        " <!-- keep --> too",
        "<keep>",
        "[keep]",
        "x" * 60 + "    [[keep]] past the 64 characters",
        "Ünïcödé ✓ plain",
    ):
        s.add({"role": "user", "content": text})
    s.add(
        {
            "role": "user",
            "content": [{"type": "text", "text": "[[keep]] "}, {"type": "text", "text": "in blocks"}],
        }
    )
    s.add({"role": "assistant", "content": "", "tool_calls": [call("c1"), call("c2"), call("")]})
    for cid, text in (
        ("c1", "ERROR: failed"),
        ("c2", "  blocked: by policy"),
        ("c9", "orphan result ✓✓"),
        ("c1", "[elided tool result — 10 bytes]"),
        ("c2", " [elided tool result — only at the very start]"),
    ):
        s.add({"role": "tool", "tool_call_id": cid, "content": text})
    s.add({"role": "assistant", "content": "", "tool_calls": [call("c1")]})  # a repeated id: later owner
    s.add({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "error: in blocks"}]})
    s.add({"role": "assistant", "content": "done"})
    assert_same(s)
    roles, _, flags, _, nbytes = s.plan_history(MODEL).columns()  # type: ignore[union-attr]
    assert roles.startswith("ss")  # the developer message plans as a system message
    assert flags.count(planning._core.PLAN_DIGEST) == 3
    assert nbytes[-2] == len(b"error: in blocks")


def test_an_estimating_model_has_no_core_history() -> None:
    s = Session(system="sys")
    s.add({"role": "user", "content": "hi"})
    assert s.plan_history("some-unknown-model") is None
