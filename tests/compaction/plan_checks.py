"""Invariant checks of a compaction plan over chat messages (shared by the planner tests)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from foldlog import planning
from foldlog._core import CompactionPlan

PREFIX, KEPT, FOLD, TAIL = "prefix", "kept", "fold", "tail"


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
            for cid in planning.call_ids(m):
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
    messages: Sequence[Mapping[str, Any]], plan: CompactionPlan, settings: Mapping[str, Any]
) -> None:
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
    for i, m in enumerate(messages):
        if planning.is_digest(m):
            assert cls[i] != FOLD, f"digest {i} would be re-summarised"
    if plan.tail_start < n and plan.tail_start > plan.head:
        assert messages[plan.tail_start].get("role") != "tool", "the tail opens on a tool result"
    floor = min(int(settings.get("min_recent_keep", 2)), n - plan.head)
    assert n - plan.tail_start >= floor
    if plan.should_fold:
        assert plan.fold and (
            settings.get("force") or plan.fold_tokens >= settings.get("min_fold_tokens", 400)
        )
        # every result on the new surface still follows its call
        new = folded_surface(messages, plan, {"role": "user", "content": planning.DIGEST_OPEN})
        seen: set[str] = set()
        for m in new:
            if m.get("role") == "assistant":
                seen.update(planning.call_ids(m))
            elif m.get("role") == "tool" and any(
                str(m.get("tool_call_id")) in planning.call_ids(x) for x in messages
            ):
                assert str(m.get("tool_call_id")) in seen, "a kept/tail result lost its call"
