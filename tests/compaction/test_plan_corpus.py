"""The planner over real transcripts (Claude Code, Codex, τ-bench): every plan keeps the invariants,
and folding a growing session again and again never breaks a call group or re-summarises a digest."""

from __future__ import annotations

from typing import Any

import pytest

from foldlog import planning

from .corpus_histories import all_histories, corpus_dir
from .plan_checks import check_plan, folded_surface

pytestmark = pytest.mark.skipif(not corpus_dir().is_dir(), reason="../shared/corpus is not available")

WINDOWS = (8_000, 32_000, 128_000, 1_000_000)


@pytest.fixture(scope="module")
def histories() -> list[tuple[str, list[dict[str, Any]]]]:
    found = [(n, h) for n, h in all_histories() if h]
    kinds = {n.split(":")[0] for n, _ in found}
    assert kinds == {"claude", "codex", "tau"}, kinds
    return found


@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("policy", ["errors", "user_marked", "none"])
def test_plans_over_real_histories_keep_the_invariants(
    histories: list[tuple[str, list[dict[str, Any]]]], window: int, policy: str
) -> None:
    folds = 0
    for _name, msgs in histories:
        tokens = planning.EstimateCounter().count(msgs)
        for force in (False, True):
            settings = {"context_window": window, "keep_policy": policy, "force": force}
            history, plan = planning.plan(msgs, tokens, **settings)
            check_plan(msgs, plan, settings)
            assert repr(history.plan(**settings)) == repr(plan)  # deterministic
            assert history.plan(**settings).fold == plan.fold
            folds += plan.should_fold
    if window <= 32_000:
        assert folds > 20  # the long sessions really are folded at small windows


def _grow_and_fold(msgs: list[dict[str, Any]], window: int) -> tuple[int, list[dict[str, Any]]]:
    """Replays a session message by message, folding whenever the estimate passes 80%."""
    counter = planning.EstimateCounter()
    surface: list[dict[str, Any]] = []
    tokens: list[int] = []
    digests: list[str] = []
    folds = 0
    for m in msgs:
        surface.append(m)
        tokens.append(counter.count_one(m))
        if planning.is_digest(m):
            digests.append(m["content"])  # the transcript's own compaction summary
        if m.get("role") == "assistant" and m.get("tool_calls"):
            continue  # the agent compacts after a tool batch, never between a call and its results
        if sum(tokens) < 0.8 * window:
            continue
        settings = {"context_window": window, "force": sum(tokens) >= 0.9 * window}
        _, plan = planning.plan(surface, tokens, **settings)
        check_plan(surface, plan, settings)
        if not plan.should_fold:
            continue
        folds += 1
        text = f"{planning.DIGEST_OPEN}\nfold {folds}: {plan.fold_count} messages\n{planning.DIGEST_CLOSE}"
        digest = {"role": "user", "content": text}
        surface = folded_surface(surface, plan, digest)
        tokens = counter.count(surface)
        digests.append(text)
        # every digest so far is still on the surface, verbatim (a new digest goes before the
        # tail, so it may precede a digest that the tail still holds)
        assert sorted(x["content"] for x in surface if planning.is_digest(x)) == sorted(digests)
    return folds, surface


@pytest.mark.parametrize("window", [8_000, 32_000])
def test_repeated_folds_of_growing_real_sessions(
    histories: list[tuple[str, list[dict[str, Any]]]], window: int
) -> None:
    total = 0
    for name, msgs in histories:
        if name.startswith("tau:"):
            continue
        folds, surface = _grow_and_fold(msgs, window)
        total += folds
        # the last messages of the session are still there verbatim
        assert surface[-1] is msgs[-1]
    assert total >= 10
