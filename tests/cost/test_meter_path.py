"""The meter prices each reply without reading the log (B7: decoding the step's events to find the
model cost ~12 % of the event loop): without limits its ledger is brought up to date only when
its totals are read. Every reply still records its cost, in order, priced with the model its
request named; a run that fails mid-turn keeps every cost it recorded, and the live totals equal
those read back from the log."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from foldlog import Agent, Options, Session, tool
from foldlog.cost.ledger import session_ledger
from foldlog.cost.prices import Price
from foldlog.errors import ProviderError
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, of_type, reply

# every scripted reply reports 100 prompt + 10 completion tokens (agent_helpers.reply)
CHEAP = Price(input=1.0, output=2.0)  # a request: 100e-6 + 20e-6
DEAR = Price(input=10.0, output=20.0)  # a request: 1000e-6 + 200e-6


class TwoModels(Scripted):
    prices: Mapping[str, Price] = {"cheap": CHEAP, "dear": DEAR}


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def _costs(session: Session) -> list[float]:
    return [e["data"]["cost"]["total"] for e in of_type(session, "assistant/message")]


def test_steps_without_limits_read_no_events_and_record_every_cost(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.open(path, system="s")
    p = TwoModels([reply("", call("lookup", {"key": str(i)}, f"c{i}")) for i in range(3)] + [reply("done")])
    agent = Agent(p, [lookup], session, Options(model="cheap", release_when_idle=False))
    assert agent.run_sync("go") == "done"
    assert agent.meter.ledger.seen == 0  # no step brought the ledger up to date
    assert _costs(session) == pytest.approx([120e-6] * 4)
    live = agent.meter.spend  # read: brought up to date now
    assert agent.meter.ledger.seen == len(session.events)
    session.close()
    assert session_ledger(path, price_missing=False).session.to_dict() == live.to_dict()
    assert live.requests == 4 and live.cost == pytest.approx(4 * 120e-6)


def test_each_reply_is_priced_with_the_model_its_request_named() -> None:
    p = TwoModels([reply("one"), reply("two"), reply("three")])
    agent = Agent(p, [], Session(system="s"), Options(model="cheap"))
    agent.run_sync("a")
    agent.model = "dear"
    agent.run_sync("b")
    agent.model = "cheap"
    agent.run_sync("c")
    assert _costs(agent.session) == pytest.approx([120e-6, 1200e-6, 120e-6])
    named = [e["data"]["model"] for e in of_type(agent.session, "request/header")]
    assert named == ["cheap", "dear", "cheap"]
    assert agent.meter.spend.cost == pytest.approx(1440e-6)


def test_a_failed_turn_keeps_the_costs_recorded_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    session = Session.open(path, system="s")
    gone = ProviderError("the endpoint went away")
    p = TwoModels([reply("", call("lookup", {"key": k}, f"c{k}")) for k in "ab"] + [gone])
    agent = Agent(p, [lookup], session, Options(model="dear", release_when_idle=False))
    with pytest.raises(ProviderError):
        agent.run_sync("go")
    session.close()
    again = Session.load(path)
    assert _costs(again) == pytest.approx([1200e-6, 1200e-6])
    assert agent.meter.spend.to_dict() == session_ledger(path, price_missing=False).session.to_dict()
