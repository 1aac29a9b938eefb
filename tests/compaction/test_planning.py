"""The planner bindings and the planner input built from chat messages."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog import CompactionError, _core, planning


def call(cid: str, name: str = "bash") -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_flags_read_from_messages() -> None:
    assert planning.is_digest({"role": "user", "content": "\n <compaction-summary>\nx"})
    assert not planning.is_digest({"role": "assistant", "content": "<compaction-summary>"})
    for marker in ("[[keep]]", "[keep]", "<keep>", "<!-- keep -->", "  [KEEP] shout"):
        assert planning.is_user_marked({"role": "user", "content": f"{marker} the port is 8443"})
    assert not planning.is_user_marked({"role": "user", "content": "please [keep] this"})
    assert planning.is_error_result({"role": "tool", "content": " Error: no such file"})
    assert planning.is_error_result({"role": "tool", "content": "blocked: outside the workspace"})
    assert not planning.is_error_result({"role": "tool", "content": "no errors: fine"})
    blocks = {"role": "user", "content": [{"type": "text", "text": "[keep] a"}, {"type": "image"}]}
    assert planning.message_text(blocks) == "[keep] a" and planning.is_user_marked(blocks)


def test_build_history_links_results_to_their_calls() -> None:
    msgs = [
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
    _, plan = planning.plan(msgs, tokens, context_window=10_000, tail_tokens=100)
    # the failing result keeps its whole call group, the big sibling included
    assert (plan.head, plan.tail_start) == (2, 6)
    assert plan.kept == [2, 3, 4]
    assert plan.fold == [5]
    _, plan = planning.plan(msgs, tokens, context_window=10_000, tail_tokens=100, keep_policy="none")
    assert plan.fold == [2, 3, 4, 5]
    history = planning.build_history(msgs, tokens)
    assert history.prune_candidates(plan) == [3]
    assert history.prune_candidates(plan, prune_min_bytes=10) == [3, 4]
    assert len(history) == 8 and history.tokens() == tokens


def test_elided_results_are_not_pruned_again() -> None:
    elided = f"{planning.ELIDED_PREFIX}bash, 9000 bytes dropped to save context; re-run the tool if needed]"
    msgs = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "", "tool_calls": [call("a")]},
        {"role": "tool", "tool_call_id": "a", "content": elided + " " * 2000},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "next"},
    ]
    history, plan = planning.plan(msgs, [5, 5, 900, 5, 5], context_window=0, tail_tokens=10, force=True)
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
    with pytest.raises(ValueError, match="unknown role 'robot'"):
        planning.build_history([{"role": "robot", "content": ""}], [1])
    with pytest.raises(ValueError, match="2 token counts for 1 messages"):
        planning.build_history([{"role": "user", "content": ""}], [1, 2])
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


def test_estimate_counter_is_marked_and_rough() -> None:
    c = planning.EstimateCounter()
    assert "ESTIMATE" in (planning.EstimateCounter.__doc__ or "")
    assert c.count_one({"role": "user", "content": "x" * 400}) == 104
    with_call = {"role": "assistant", "content": "", "tool_calls": [call("a", "read_file")]}
    assert c.count_one(with_call) > c.FRAMING

    class Exact:
        def token_counts(self) -> list[int]:
            return [7]

    assert planning.token_counts(Exact(), [{"role": "user", "content": "hi"}]) == [7]
    assert planning.token_counts(object(), [{"role": "user", "content": "hi"}]) == [4]


def test_model_counter_falls_back_to_the_estimate() -> None:
    assert isinstance(planning.model_counter("no-such-model"), planning.EstimateCounter)

    class Tok:
        def count_message(self, m: Any) -> int:
            return len(planning.message_text(m))

    assert planning.MessageCounter(Tok()).count([{"role": "user", "content": "abc"}]) == [3]
    assert planning.token_counts(
        object(), [{"role": "user", "content": "abcd"}], planning.MessageCounter(Tok())
    ) == [4]
