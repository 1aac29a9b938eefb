"""The planner over real transcripts (Claude Code, Codex, τ-bench): every plan keeps the invariants,
imported compactions are digests, and folding a growing session again and again never breaks a call
group or re-summarises a digest."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from foldlog import Options, Session, _core
from foldlog._core import PlanHistory
from foldlog.compaction import Compactor
from foldlog.providers.base import Done
from tests.compaction.corpus_histories import all_histories, corpus_dir, imported_sessions
from tests.compaction.plan_checks import ESTIMATE_MODEL, check_plan, digest_indices

pytestmark = pytest.mark.skipif(not corpus_dir().is_dir(), reason="../shared/corpus is not available")

WINDOWS = (8_000, 32_000, 128_000, 1_000_000)
MODEL = "deepseek-v4-flash"

Imported = tuple[str, Sequence[Any], PlanHistory, list[int]]


@pytest.fixture(scope="module")
def sessions() -> list[Imported]:
    found: list[Imported] = []
    for name, s in imported_sessions():
        history = s.plan_history(ESTIMATE_MODEL)
        digests = [i for i, f in enumerate(history.columns()[2]) if f & _core.PLAN_DIGEST]
        found.append((name, s.derive_messages(), history, digests))
    kinds = {n.split(":")[0] for n, *_ in found}
    assert kinds == {"claude-code", "codex", "openai"}, kinds
    # every source compaction of the corpus was imported as a fold, and is a digest
    assert sum(len(d) for *_, d in found) >= 7
    return found


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("policy", ["errors", "user_marked", "none"])
def test_plans_over_real_histories_keep_the_invariants(
    sessions: list[Imported], window: int, policy: str
) -> None:
    folds = 0
    for _name, messages, history, digests in sessions:
        for force in (False, True):
            settings: dict[str, Any] = {"context_window": window, "keep_policy": policy, "force": force}
            plan = history.plan(**settings)
            check_plan(messages, plan, settings, digests)
            assert repr(history.plan(**settings)) == repr(plan)  # deterministic
            assert history.plan(**settings).fold == plan.fold
            folds += plan.should_fold
            if digests and plan.should_fold:
                # a digest right at the start is pinned; a later one is kept, never folded
                assert all(i < plan.head or i in plan.kept or i >= plan.tail_start for i in digests)
    if window <= 32_000:
        assert folds > 20  # the long sessions really are folded at small windows


class _NoSummary:
    """A summariser that returns nothing: every fold is the mechanical one."""

    model = MODEL

    def __init__(self, window: int) -> None:
        self.context_window = window

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        yield Done("stop")


async def _grow_and_fold(msgs: list[dict[str, Any]], window: int) -> tuple[int, Session]:
    """Replays a session message by message through a Compactor, folding whenever the session's
    count passes 80% (forced past 90%); every fold does what its preview said."""
    s = Session()
    c = Compactor(s, _NoSummary(window), Options(context_window=window, prune_min_bytes=10**9).compaction())  # type: ignore[arg-type]
    digests: list[str] = []
    folds = 0
    for m in msgs:
        s.add(m)
        if m.get("role") == "assistant" and m.get("tool_calls"):
            continue  # the agent compacts after a tool batch, never between a call and its results
        total = s.token_count(MODEL)
        if total < 0.8 * window:
            continue
        force = total >= 0.9 * window
        preview = c.plan(force=force)
        settings = {"context_window": window, "force": force}
        check_plan(s.derive_messages(), preview.plan, settings, digest_indices(s))
        before = s.derive_messages()
        # folded again by the kept-overflow rule (only when the plan folds: a skipped plan folds nothing)
        released = {before[i]["content"] for i in preview.plan.released} if preview.should_fold else set()
        digests = [d for d in digests if d not in released]
        result = await c.compact("manual", force=force)
        if not preview.should_fold:
            assert result is None
            continue
        assert result is not None and result.preview == preview and result.folded == preview.folded
        folds += 1
        surface = s.derive_messages()
        digests.append(surface[preview.pinned + preview.kept]["content"])
        # every digest so far is still on the surface, verbatim (a new digest goes before the
        # tail, so it may precede a digest that the tail still holds)
        assert sorted(surface[i]["content"] for i in digest_indices(s)) == sorted(digests)
    return folds, s


@pytest.mark.parametrize("window", [8_000, 32_000])
def test_repeated_folds_of_growing_real_sessions(window: int) -> None:
    total = 0
    for name, msgs in all_histories():
        if name.startswith("tau:") or not msgs:
            continue
        folds, s = asyncio.run(_grow_and_fold(msgs, window))
        total += folds
        # the last message of the session is still there verbatim
        assert s.derive_messages()[-1]["content"] == msgs[-1]["content"]
    assert total >= 10
