"""Budgets: `Options.token_budget` and `Options.cost_limit` at each boundary (exactly at, just
over, just under), a sub-agent's spending, a resumed session already over its budget, and a cost
limit on a model without a price. The spending is read back from the log (a reload gives the
same totals)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from foldlog import Agent, BudgetExceeded, Options, Session, tool
from foldlog.agent.subagent import task_tool
from foldlog.cost.ledger import Ledger, session_ledger
from foldlog.cost.prices import Price
from foldlog.errors import ConfigError
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, of_type, reply

# every scripted reply reports 100 prompt + 10 completion tokens (agent_helpers.reply)
PER_REQUEST_TOKENS = 110
PRICE = Price(input=1.0, output=2.0)  # USD per 1M: a request costs 100e-6 + 20e-6
PER_REQUEST_COST = 120e-6


class PricedScripted(Scripted):
    """A scripted model with its own price (as a provider given ``prices=`` has)."""

    prices: Mapping[str, Price] = {"scripted": PRICE}


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def _three_steps() -> list[dict[str, Any]]:
    return [
        reply("", call("lookup", {"key": "a"}, "c1")),
        reply("", call("lookup", {"key": "b"}, "c2")),
        reply("done"),
    ]


def _run(options: Options, session: Session | None = None) -> tuple[Agent, Scripted, BaseException | None]:
    p = PricedScripted(_three_steps())
    agent = Agent(p, [lookup], session or Session(system="s"), options)
    try:
        agent.run_sync("go")
    except BudgetExceeded as e:
        return agent, p, e
    return agent, p, None


def _end(session: Session) -> Mapping[str, Any]:
    reason = of_type(session, "turn/end")[-1]["data"]["reason"]
    assert isinstance(reason, Mapping)
    return reason


@pytest.mark.parametrize(
    ("budget", "requests", "stopped"),
    [
        (2 * PER_REQUEST_TOKENS, 2, True),  # exactly at the budget after two: the third never starts
        (2 * PER_REQUEST_TOKENS - 1, 2, True),  # just over after two
        (2 * PER_REQUEST_TOKENS + 1, 3, False),  # just under after two: the third runs
        (PER_REQUEST_TOKENS - 1, 1, True),  # the first request passes it
    ],
)
def test_token_budget_boundaries(budget: int, requests: int, stopped: bool) -> None:
    agent, p, err = _run(Options(token_budget=budget))
    assert p.calls == requests
    if stopped:
        assert isinstance(err, BudgetExceeded) and err.limit == "tokens"
        assert err.used == requests * PER_REQUEST_TOKENS and err.budget == budget
        reason = _end(agent.session)
        assert reason["kind"] == "budget" and reason["limit"] == "tokens"
        assert reason["used"] == requests * PER_REQUEST_TOKENS
        # the turn is closed validly: every step ended, the last one opened for the refused request
        types = agent.session.events.types()
        assert types.count("step/start") == types.count("step/end")
    else:
        assert err is None and _end(agent.session)["kind"] == "completed"


@pytest.mark.parametrize(
    ("limit", "requests", "stopped"),
    [
        (2 * PER_REQUEST_COST, 2, True),  # exactly at
        (2 * PER_REQUEST_COST - 1e-9, 2, True),  # just over
        (2 * PER_REQUEST_COST + 1e-9, 3, False),  # just under
    ],
)
def test_cost_limit_boundaries(limit: float, requests: int, stopped: bool) -> None:
    agent, p, err = _run(Options(cost_limit=limit))
    assert p.calls == requests
    ledger = session_ledger(agent.session, price_missing=False)
    assert ledger.session.cost == pytest.approx(requests * PER_REQUEST_COST)
    assert [r.cost.total if r.cost else None for r in ledger.requests] == [PER_REQUEST_COST] * requests
    if stopped:
        assert isinstance(err, BudgetExceeded) and err.limit == "cost"
        assert _end(agent.session)["kind"] == "budget"
    else:
        assert err is None


def test_cost_is_recorded_and_a_reload_gives_the_same_totals(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.open(path, system="s")
    agent, _, err = _run(Options(), session)
    assert err is None
    live = agent.meter.spend
    session.close()
    again = session_ledger(path, price_missing=False)
    assert again.session.to_dict() == live.to_dict()
    assert again.session.requests == 3 and again.session.cost == pytest.approx(3 * PER_REQUEST_COST)
    assert again.session.input == pytest.approx(3 * 100e-6) and again.session.output == pytest.approx(
        3 * 20e-6
    )
    costs = [e["data"]["cost"] for e in of_type(Session.load(path), "assistant/message")]
    assert costs[0] == {
        "total": PER_REQUEST_COST, "input": 100e-6, "cacheRead": 0.0, "cacheWrite": 0.0, "output": 20e-6,
        "reasoning": 0.0, "currency": "USD", "source": "foldlog",
    }  # fmt: skip
    assert set(again.turns) == {1}


def _delegating(child_replies: int) -> list[dict[str, Any]]:
    replies = [reply("", call("task", {"prompt": "look a and b"}, "t1"))]
    replies += [reply("", call("lookup", {"key": str(i)}, f"c{i}")) for i in range(child_replies - 1)]
    replies += [reply("child answer"), reply("parent answer")]
    return replies


def test_sub_agent_spending_rolls_up_and_counts_against_the_parent(tmp_path: Path) -> None:
    # parent request 1 (110) + child 2 requests (220) = 330: the parent's next request never starts
    session = Session.open(tmp_path / "parent.jsonl", system="s")
    p = PricedScripted(_delegating(2))
    agent = Agent(p, [lookup, task_tool()], session, Options(token_budget=3 * PER_REQUEST_TOKENS))
    with pytest.raises(BudgetExceeded) as info:
        agent.run_sync("go")
    assert info.value.used == 3 * PER_REQUEST_TOKENS and p.calls == 3
    result = of_type(session, "tool/result")[0]["data"]
    assert result["message"]["content"] == "child answer"
    sub = result["meta"]["subagent"]
    assert sub["spend"]["requests"] == 2 and sub["spend"]["usage"]["promptTokens"] == 200
    assert sub["spend"]["cost"] == pytest.approx(2 * PER_REQUEST_COST)
    # the child's log is a file beside the parent's, linked to the call
    child = Session.load(tmp_path / f"{sub['session']}.jsonl")
    assert child.parent == {"kind": "subagent", "id": session.id, "callId": "t1"}
    ledger = session_ledger(session)
    assert ledger.session.requests == 3 and ledger.session.tokens == 3 * PER_REQUEST_TOKENS
    assert ledger.turns[1].cost == pytest.approx(3 * PER_REQUEST_COST)
    assert [(c, s) for c, s, _ in ledger.subagents] == [("t1", sub["session"])]
    session.close()


def test_a_sub_agent_gets_what_its_parent_has_left() -> None:
    # budget 250: the parent spends 110, the child may spend 140: it stops before its third request
    session = Session(system="s")
    p = PricedScripted(_delegating(3))
    agent = Agent(p, [lookup, task_tool()], session, Options(token_budget=250))
    with pytest.raises(BudgetExceeded):
        agent.run_sync("go")
    result = of_type(session, "tool/result")[0]["data"]
    assert result["message"]["isError"] and "BudgetExceeded" in result["message"]["content"]
    assert result["meta"]["subagent"]["spend"]["requests"] == 2  # 110 + 110 >= 140
    assert p.calls == 3  # parent 1 + child 2; the parent's second request never starts
    assert Ledger.of_events(session.events).session.tokens == 330


def test_resume_of_a_session_over_budget(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.open(path, system="s")
    _run(Options(), session)  # 330 tokens, 3 * 120e-6 USD
    session.close()
    for options in (Options(token_budget=330), Options(cost_limit=3 * PER_REQUEST_COST)):
        again = Session.open(path)
        p = PricedScripted([reply("never")])
        agent = Agent(p, [lookup], again, options)
        with pytest.raises(BudgetExceeded):
            agent.run_sync("more")
        assert p.calls == 0 and _end(again)["kind"] == "budget"
        again.close()


def test_a_cost_limit_needs_a_priced_model() -> None:
    with pytest.raises(ConfigError, match="'scripted' has no price"):
        Agent(Scripted([reply("x")]), [], Session(), Options(cost_limit=1.0))
    Agent(Scripted([reply("x")]), [], Session(), Options(token_budget=10))  # tokens need no price


def test_a_model_switched_to_an_unpriced_one_fails_before_the_request() -> None:
    p = PricedScripted([reply("x")])
    agent = Agent(p, [], Session(), Options(cost_limit=1.0))
    agent.model = "unpriced-model"
    with pytest.raises(ConfigError, match="unpriced-model"):
        agent.run_sync("go")
    assert p.calls == 0


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ConfigError, match="cost_limit"):
        Agent(PricedScripted([]), [], Session(), Options(cost_limit=-1.0))
    with pytest.raises(ConfigError, match="token_budget"):
        Agent(PricedScripted([]), [], Session(), Options(token_budget=-1))


def test_a_long_resumed_log_is_read_by_type_first(tmp_path: Path) -> None:
    """Past 256 new events the meter decodes only the events its ledger reads: same totals."""
    path = tmp_path / "long.jsonl"
    session = Session.open(path, system="s")
    _run(Options(), session)
    for i in range(300):
        session.add({"role": "user", "content": f"note {i}"})
    session.close()
    again = Session.open(path)
    agent = Agent(PricedScripted([reply("never")]), [lookup], again, Options(token_budget=330))
    assert len(again.events) - agent.meter.ledger.seen > 256
    with pytest.raises(BudgetExceeded):
        agent.run_sync("more")
    assert agent.meter.spend.to_dict() == Ledger.of_events(again.events).session.to_dict()
    assert agent.meter.ledger.seen == len(again.events)
    again.close()
