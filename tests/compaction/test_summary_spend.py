"""A compaction's summary calls are requests like any other: recorded in its
``compaction/summary`` event (usage, cost, calls), read by `foldlog.cost.Ledger` into the turn
and the session (so ``log inspect``, ``sessions`` and batch show them), and counted by the
budgets (issue 26: they were neither priced nor counted)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from foldlog import BudgetExceeded, Session
from foldlog.batch.cost import session_cost
from foldlog.cli.cost_view import cost_report, ledger_of
from foldlog.cost.ledger import session_ledger
from foldlog.cost.prices import Price
from foldlog.providers import Scripted
from tests.compaction.test_compactor import Run, answer, step, summary_reply

#: the replies' reported tokens (prompt + completion) before the fourth request
REPLIES = 1005 + 2005 + 3305
SUMMARY = 50 + 20  # summary_reply(): 50 prompt + 20 completion tokens


class PricedSummariser(Scripted):
    prices: Mapping[str, Price] = {"scripted": Price(input=1.0, output=2.0)}


def _summary_event(session: Session) -> Mapping[str, Any]:
    data = next(e for e in session.events if e["type"] == "compaction/summary")["data"]
    assert isinstance(data, Mapping)
    return data


def _folding_run(**opts: Any) -> Run:
    return Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)], **opts)


def test_the_summary_call_is_recorded_priced_and_in_the_ledger() -> None:
    r = _folding_run()
    r.summarizer = PricedSummariser([summary_reply()])
    r.agent.compactor.settings.summary_provider = r.summarizer
    r.agent.run_sync("fetch the pages")
    data = _summary_event(r.session)
    assert data["requests"] == 1
    assert data["usage"]["promptTokens"] == 50 and data["usage"]["completionTokens"] == 20
    assert data["cost"]["total"] == pytest.approx((50 * 1.0 + 20 * 2.0) / 1e6)
    ledger = session_ledger(r.session)
    kinds = [q.kind for q in ledger.requests]
    assert kinds.count("summary") == 1 and kinds.count("reply") == 4
    assert ledger.session.requests == 5
    assert ledger.session.usage.total_tokens == REPLIES + 1505 + SUMMARY
    assert ledger.turns[1].usage.total_tokens == ledger.session.usage.total_tokens  # in its turn
    [summary] = [q for q in ledger.requests if q.kind == "summary"]
    assert summary.cost is not None and summary.cost.total == pytest.approx(90e-6)
    # what `log inspect --json`, `sessions` and batch report read the same ledger
    report = cost_report(ledger_of(r.session))
    assert report["requests"] == 5 and report["cost"] == pytest.approx(90e-6)
    cost, currency = session_cost(r.session)
    assert cost == pytest.approx(90e-6) and currency == "USD"


@pytest.mark.parametrize("budget", [REPLIES + SUMMARY, REPLIES + 1])
def test_the_summary_counts_in_the_token_budget(budget: int) -> None:
    # without the summary's 70 tokens the session is under both budgets and a fourth request runs
    r = _folding_run(token_budget=budget)
    with pytest.raises(BudgetExceeded) as err:
        r.agent.run_sync("fetch the pages")
    assert err.value.used == REPLIES + SUMMARY  # the summary's tokens are in what was used
    assert r.provider.calls == 3


def test_a_summariser_without_usage_is_counted_locally() -> None:
    r = _folding_run(summaries=[{"content": "## Goal\n- fetch pages"}])
    r.agent.run_sync("fetch the pages")
    data = _summary_event(r.session)
    assert "usage" not in data and data["requests"] == 1
    assert isinstance(data["countedTokens"], int) and data["countedTokens"] > 0
    assert session_ledger(r.session).session.counted_tokens == data["countedTokens"]


def test_a_mechanical_fold_made_no_call() -> None:
    boom = RuntimeError("summariser down")
    r = _folding_run(summaries=[boom, boom])
    r.agent.run_sync("go")
    data = _summary_event(r.session)
    assert data["mechanical"] is True and data["requests"] == 2  # two failed calls were made
    assert "usage" not in data
