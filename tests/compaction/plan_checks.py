"""Invariant checks of a compaction plan over a session's derived messages (shared by the planner
tests), and the session facts they need."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from foldlog import Session, _core
from foldlog._core import CompactionPlan, PlanHistory

PREFIX, KEPT, FOLD, TAIL = "prefix", "kept", "fold", "tail"
# any model without an exact tokenizer: the session plans on the core's estimate
ESTIMATE_MODEL = "no-exact-tokenizer"


def digest_indices(session: Session) -> list[int]:
    """Derived messages the planner takes for digests (the core reads them from the log)."""
    _, _, flags, _, _ = session.plan_history(ESTIMATE_MODEL).columns()
    return [i for i, f in enumerate(flags) if f & _core.PLAN_DIGEST]


def history_with_tokens(session: Session, tokens: Sequence[int]) -> PlanHistory:
    """The session's planner input with the token counts a test chooses."""
    return session.plan_history(ESTIMATE_MODEL).with_tokens(list(tokens))


def session_of(messages: Sequence[Mapping[str, Any]]) -> Session:
    s = Session()
    for m in messages:
        s.add(m)
    return s


def call_ids(m: Mapping[str, Any]) -> list[str]:
    return [str(c["id"]) for c in m.get("tool_calls") or () if c.get("id")]


def classes(plan: CompactionPlan, n: int) -> list[str]:
    cls = [PREFIX] * n
    for i in range(plan.tail_start, n):
        cls[i] = TAIL
    for i in plan.kept:
        cls[i] = KEPT
    for i in plan.fold:
        cls[i] = FOLD
    return cls


def callers(messages: Sequence[Mapping[str, Any]]) -> dict[int, int]:
    """tool message index -> index of the assistant message holding its call."""
    owner: dict[str, int] = {}
    out: dict[int, int] = {}
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            for cid in call_ids(m):
                owner[cid] = i
        elif m.get("role") == "tool" and str(m.get("tool_call_id")) in owner:
            out[i] = owner[str(m.get("tool_call_id"))]
    return out


def folded_surface(
    messages: Sequence[Mapping[str, Any]], plan: CompactionPlan, digest: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """prefix + kept + digest + tail, the surface a fold leaves."""
    return (
        list(messages[: plan.head])
        + [messages[i] for i in plan.kept]
        + [digest]
        + list(messages[plan.tail_start :])
    )


def check_plan(
    messages: Sequence[Mapping[str, Any]],
    plan: CompactionPlan,
    settings: Mapping[str, Any],
    digests: Collection[int] = (),
) -> None:
    """``digests``: the indices of the digests among ``messages`` (never folded)."""
    n = len(messages)
    assert 0 <= plan.head <= plan.tail_start <= n
    region = sorted(plan.kept + plan.fold)
    if plan.skipped == "too-few-messages":
        assert region == []
    else:
        assert region == list(range(plan.head, plan.tail_start)), "kept + fold must partition the region"
    assert plan.kept == sorted(plan.kept) and plan.fold == sorted(plan.fold)
    cls = classes(plan, n)
    for result, call in callers(messages).items():
        assert cls[result] == cls[call], f"tool result {result} ({cls[result]}) split from its call {call}"
    for i in digests:
        # only the kept-overflow rule folds an earlier digest (docs/compaction.md)
        assert cls[i] != FOLD or i in plan.released, f"digest {i} would be re-summarised"
    if plan.tail_start < n and plan.tail_start > plan.head:
        assert messages[plan.tail_start].get("role") != "tool", "the tail opens on a tool result"
    floor = min(int(settings.get("min_recent_keep", 2)), n - plan.head)
    assert n - plan.tail_start >= floor
    if plan.should_fold:
        assert plan.fold and (
            settings.get("force") or plan.fold_tokens >= settings.get("min_fold_tokens", 400)
        )
        # every result on the new surface still follows its call
        new = folded_surface(messages, plan, {"role": "user", "content": "digest"})
        seen: set[str] = set()
        for m in new:
            if m.get("role") == "assistant":
                seen.update(call_ids(m))
            elif m.get("role") == "tool" and any(str(m.get("tool_call_id")) in call_ids(x) for x in messages):
                assert str(m.get("tool_call_id")) in seen, "a kept/tail result lost its call"
