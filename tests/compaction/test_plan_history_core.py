"""`Session.plan_history()` builds the planner's input in the core, without Python messages, for
every tokenizer: the counts are the session's (the exact ones kept in the log, or the core's
estimate), and a digest is read from the log (a `user/message` whose surface op is a fold)."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog import Session, _core
from tests.compaction.plan_checks import ESTIMATE_MODEL, check_plan, digest_indices
from tests.log.test_wire_body import CORPUS, corpus_session, fold_middle

MODEL = "deepseek-v4-flash"
SETTINGS: dict[str, Any] = {"context_window": 20_000, "tail_tokens": 4_000}


def fold_ops(s: Session) -> list[int]:
    """Indices of the derived messages recorded as a `user/message` with a fold op."""
    folds = {
        e["seq"]
        for e in s.events
        if e["type"] == "user/message"
        and isinstance(e.get("surfaceOp"), dict)
        and e["surfaceOp"]["op"] == "fold"
    }
    return [i for i, seq in enumerate(s.surface_seqs()) if seq in folds]


def assert_plans(s: Session) -> None:
    messages = s.derive_messages()
    for model in (MODEL, ESTIMATE_MODEL):
        history = s.plan_history(model)
        assert len(history) == len(messages)
        digests = [i for i, f in enumerate(history.columns()[2]) if f & _core.PLAN_DIGEST]
        assert digests == fold_ops(s)
        for force in (False, True):
            check_plan(messages, history.plan(**SETTINGS, force=force), {**SETTINGS, "force": force}, digests)
    assert s.plan_history(MODEL).tokens() == s.token_counts(MODEL)


@pytest.mark.parametrize(("fmt", "parts"), CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus_sessions_plan_from_the_core(fmt: str, parts: tuple[str, str]) -> None:
    s = corpus_session(fmt, parts)
    imported = fold_ops(s)
    assert len(imported) == (0 if fmt == "openai" else 1)  # the source's own compaction
    assert_plans(s)
    fold_middle(s)  # a digest on the surface
    assert len(fold_ops(s)) >= 1
    assert_plans(s)
    # a reload reads the counts kept in the log and still gives the same facts
    s.model = MODEL
    s2 = Session.from_bytes(s._core.to_bytes())
    assert s2.plan_history(MODEL).columns() == s.plan_history(MODEL).columns()
    assert_plans(s2)


def call(cid: Any, name: str = "bash") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_text_rules_and_call_links() -> None:
    s = Session(system="sys")
    s.append_event("system/message", {"role": "developer", "content": "dev"}, surface_op="append")
    for text in (
        "<compaction-summary>typed by the user</compaction-summary>",
        "[[KEEP]] keep me",
        " <!-- keep --> too",
        "x" * 60 + "    [[keep]] past the 64 characters",
        "Ünïcödé ✓ plain",
    ):
        s.add({"role": "user", "content": text})
    s.add({"role": "assistant", "content": "", "tool_calls": [call("c1"), call("c2"), call("")]})
    for cid, text in (
        ("c1", "ERROR: failed"),
        ("c2", "  blocked: by policy"),
        ("c9", "orphan result ✓✓"),
        ("c1", "[elided tool result — 10 bytes]"),
        ("c2", " [elided tool result — only at the very start]"),
        ("", "an empty id answers no call"),
    ):
        s.add({"role": "tool", "tool_call_id": cid, "content": text})
    s.add({"role": "assistant", "content": "", "tool_calls": [call("c1")]})  # a repeated id: later owner
    s.add({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "error: in blocks"}]})
    s.add({"role": "assistant", "content": "done"})
    roles, _, flags, callers, nbytes = s.plan_history(MODEL).columns()
    d, m, e, x = _core.PLAN_DIGEST, _core.PLAN_USER_MARKED, _core.PLAN_ERROR_RESULT, _core.PLAN_ELIDED
    assert roles == "ssuuuuuattttttata"  # the developer message plans as a system message
    assert list(flags) == [0, 0, 0, m, m, 0, 0, 0, e, e, 0, x, 0, 0, 0, e, 0]
    assert not any(f & d for f in flags)  # typed text is never a digest
    assert callers == [-1] * 8 + [7, 7, -1, 7, 7, -1, -1, 14, -1]
    assert nbytes[10] == len("orphan result ✓✓".encode()) and nbytes[-2] == len(b"error: in blocks")


def test_an_estimating_model_plans_on_the_estimate() -> None:
    s = Session(system="sys")
    s.add({"role": "user", "content": "hi"})
    history = s.plan_history("some-unknown-model")
    assert history.tokens() == [
        s.tokenizer("some-unknown-model").count_message(m) for m in s.derive_messages()
    ]
    assert digest_indices(s) == []
