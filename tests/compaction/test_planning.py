"""The planner bindings and the planner input the core builds from a session's log."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog import CompactionError, Session, _core
from foldlog.compaction import planning
from foldlog.log.text import message_text
from foldlog.log.tokens import Tokenizer
from tests.compaction.plan_checks import ESTIMATE_MODEL, history_with_tokens, session_of


def call(cid: str, name: str = "bash") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def _flags(s: Session) -> list[int]:
    return list(s.plan_history(ESTIMATE_MODEL).columns()[2])


def test_flags_read_by_the_core() -> None:
    digest, marked = _core.PLAN_DIGEST, _core.PLAN_USER_MARKED
    error, elided = _core.PLAN_ERROR_RESULT, _core.PLAN_ELIDED
    s = Session(system="s")
    for marker in ("[[keep]]", "[keep]", "<keep>", "<!-- keep -->", "  [KEEP] shout"):
        s.add({"role": "user", "content": f"{marker} the port is 8443"})
    s.add({"role": "user", "content": "please [keep] this"})
    s.add({"role": "user", "content": [{"type": "text", "text": "[keep] a"}, {"type": "text", "text": "b"}]})
    s.add(
        {
            "role": "assistant",
            "content": "<compaction-summary>",
            "tool_calls": [call("a"), call("b"), call("c")],
        }
    )
    s.add({"role": "tool", "tool_call_id": "a", "content": " Error: no such file"})
    s.add({"role": "tool", "tool_call_id": "b", "content": "blocked: outside the workspace"})
    s.add({"role": "tool", "tool_call_id": "c", "content": "no errors: fine"})
    s.add({"role": "tool", "tool_call_id": "c", "content": f"{planning.ELIDED_PREFIX}bash, 9 bytes]"})
    flags = _flags(s)
    assert flags == [0, *[marked] * 5, 0, marked, 0, error, error, 0, elided]
    assert not any(f & digest for f in flags)  # a digest is known from the log only
    assert message_text(s.derive_messages()[7]) == "[keep] a\nb"


def test_build_history_links_results_to_their_calls() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call("a"), call("b")]},
        {"role": "tool", "tool_call_id": "b", "content": "x" * 5000},
        {"role": "tool", "tool_call_id": "a", "content": "error: boom"},
        {"role": "assistant", "content": "y" * 4000},
        {"role": "user", "content": "[keep] remember"},
        {"role": "assistant", "content": "done"},
    ]
    tokens = [10, 10, 20, 1300, 10, 1000, 10, 10]
    history = history_with_tokens(session_of(msgs), tokens)
    plan = history.plan(context_window=10_000, tail_tokens=100)
    # the failing result keeps its whole call group, the big sibling included
    assert (plan.head, plan.tail_start) == (2, 6)
    assert plan.kept == [2, 3, 4]
    assert plan.fold == [5]
    plan = history.plan(context_window=10_000, tail_tokens=100, keep_policy="none")
    assert plan.fold == [2, 3, 4, 5]
    assert history.prune_candidates(plan) == [3]
    assert history.prune_candidates(plan, prune_min_bytes=10) == [3, 4]
    assert len(history) == 8 and history.tokens() == tokens
    assert history.columns()[3] == [-1, -1, -1, 2, 2, -1, -1, -1]


def test_elided_results_are_not_pruned_again() -> None:
    elided = f"{planning.ELIDED_PREFIX}bash, 9000 bytes dropped to save context; re-run the tool if needed]"
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": elided + " " * 2000},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    history = history_with_tokens(session_of(msgs), [5, 5, 900, 5, 5])
    plan = history.plan(context_window=0, tail_tokens=10, force=True)
    assert plan.fold == [1, 2]
    assert history.prune_candidates(plan) == []


def test_plan_fields_and_skips() -> None:
    h = _core.PlanHistory()
    h.extend("sua", [10, 10, 10])
    p = h.plan(context_window=1000)
    assert p.skipped == "too-few-messages" and not p.should_fold
    assert p.kept == [] and p.fold == [] and p.fold_count == 0
    assert p.tokens_before == p.tokens_after == 30
    h.append("assistant", 100)
    h.append("user", 5)
    h.append("assistant", 5)
    p = h.plan(context_window=1000, tail_tokens=10)
    assert (p.fold, p.skipped) == ([2, 3], "uneconomic")
    assert (p.tokens_before, p.fold_tokens, p.tokens_after) == (140, 110, 30)
    assert h.plan(context_window=1000, tail_tokens=10, force=True).should_fold
    assert "fold=2" in repr(p) and "'uneconomic'" in repr(p)
    h.truncate(2)
    assert len(h) == 2
    h.clear()
    assert len(h) == 0


def test_bad_input_is_named() -> None:
    h = _core.PlanHistory()
    with pytest.raises(CompactionError, match="unknown role code 'x'"):
        h.extend("x", [1])
    with pytest.raises(CompactionError, match="flags has 2 entries but tokens has 1"):
        h.extend("u", [1], [0, 0])
    with pytest.raises(CompactionError, match="unknown role"):
        h.append("developer!", 1)
    h.extend("ut", [1, 1], callers=[-1, 0])
    with pytest.raises(CompactionError, match="not an assistant"):
        h.plan(context_window=100)
    with pytest.raises(CompactionError, match="keep policy"):
        _core.PlanHistory().plan(context_window=100, keep_policy="everything")
    with pytest.raises(CompactionError, match="min_recent_keep"):
        _core.PlanHistory().plan(context_window=100, min_recent_keep=0)
    with pytest.raises(CompactionError, match="2 token counts for 1 messages"):
        history_with_tokens(session_of([{"role": "user", "content": ""}]), [1, 2])
    # a plan from another (longer) history cannot be applied here
    big = _core.PlanHistory()
    big.extend("suaaaaa", [1, 1, 900, 900, 900, 1, 1])
    p = big.plan(context_window=0, tail_tokens=1, force=True)
    with pytest.raises(CompactionError, match="history has 2 messages"):
        _two().prune_candidates(p)


def _two() -> _core.PlanHistory:
    h = _core.PlanHistory()
    h.extend("su", [1, 1])
    return h


def test_estimating_models_plan_on_the_cores_estimate() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "x" * 400},
        {"role": "assistant", "content": "", "tool_calls": [call("a", "read_file")]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
    ]
    s = session_of(msgs)
    estimate = Tokenizer.estimate()
    counts = s.plan_history(ESTIMATE_MODEL).tokens()
    assert counts == [estimate.count_message(m) for m in s.derive_messages()]
    assert counts[1] == 100 + 1 + 3  # 0.25 per character of text and role, 3 of OpenAI framing
    # the session's calibrated ratio is the estimate's parameter, not a second estimator
    s.record_prompt_tokens(2 * s.token_count(ESTIMATE_MODEL))
    calibrated = s.plan_history(ESTIMATE_MODEL).tokens()
    assert calibrated[1] > counts[1]
    assert calibrated == [s.tokenizer(ESTIMATE_MODEL).count_message(m) for m in s.derive_messages()]


def test_exact_models_plan_on_the_sessions_cached_counts() -> None:
    s = session_of([{"role": "user", "content": "hello world"}, {"role": "assistant", "content": "hi"}])
    for model in ("gpt-4o", "gpt-4"):  # o200k and cl100k ship with the core, no data files
        assert s.plan_history(model).tokens() == s.token_counts(model)
        tok = Tokenizer.for_model(model)
        assert s.token_counts(model) == [tok.count_message(m) for m in s.derive_messages()]
