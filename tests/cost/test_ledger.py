"""Spending read from logs: an imported Claude Code session (Anthropic usage with cache writes,
priced at its recorded model's rates), repaired copies of replies not counted twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.cost.ledger import Ledger
from foldlog.interchange import convert
from foldlog.interchange.writer import write_conversation
from foldlog.log.stats import log_stats
from tests.conftest import shared_path


def _imported(fmt: str, *parts: str) -> Session:
    (conv, *_) = convert(fmt, shared_path("corpus", *parts))
    session = Session(id="imported")
    write_conversation(conv, session)
    return session


def test_an_imported_claude_code_session_is_priced_by_kind() -> None:
    session = _imported("claude-code", "claude-code-spotter", "tool_heavy.jsonl")
    ledger = Ledger.of_events(session.events)
    s = ledger.session
    assert {r.model for r in ledger.requests} == {"claude-opus-4-6"}
    u = s.usage
    # four replies: 17,750 uncached input of which 17,696 written to the cache, 88,231 read, 212 out
    counts = (s.requests, u.cache_miss_tokens, u.cache_write_tokens, u.cache_hit_tokens, u.completion_tokens)
    assert counts == (4, 17_750, 17_696, 88_231, 212)
    # claude-opus-4-6, USD per 1M: input 5, cache write 6.25, cache read 0.50, output 25
    assert s.input == pytest.approx(54 * 5 / 1e6)
    assert s.cache_write == pytest.approx(17_696 * 6.25 / 1e6)
    assert s.cache_read == pytest.approx(88_231 * 0.5 / 1e6)
    assert s.output == pytest.approx(212 * 25 / 1e6)
    assert s.cost == pytest.approx(0.1602855)
    assert s.unpriced == 0 and s.currency == "USD"
    assert sum(t.cost for t in ledger.turns.values()) == pytest.approx(s.cost)
    # without pricing what the log did not record, every reply is unpriced (tokens still counted)
    bare = Ledger.of_events(session.events, price_missing=False).session
    assert bare.unpriced == 4 and bare.cost == 0 and bare.usage.prompt_tokens == 105_981


def test_load_repair_copies_are_not_new_requests(tmp_path: Path) -> None:
    session = _imported(
        "codex", "codex-localpush", "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"
    )
    live = Ledger.of_events(session.events, price_missing=False).session
    path = tmp_path / "codex.jsonl"
    session.save(path)
    loaded = Session.load(path)
    assert loaded.repair_report["arguments_closed"] > 0  # the repair re-records replies (with their usage)
    again = Ledger.of_events(loaded.events, price_missing=False).session
    assert again.requests == live.requests and again.usage == live.usage
    # the core's statistics count the stored events only: the same sums
    assert log_stats(loaded)["usage"]["promptTokens"] == again.usage.prompt_tokens


def test_the_agents_running_ledger_keeps_totals_not_a_record_per_request() -> None:
    # a host keeps thousands of idle agents: their ledgers must not grow with every request
    from foldlog import Agent
    from foldlog.providers import Scripted

    usage = {"prompt_tokens": 10, "completion_tokens": 2}
    calls: list[dict[str, Any]] = [
        {"content": "", "tool_calls": [{"id": f"c{i}", "name": "echo", "arguments": "{}"}], "usage": usage}
        for i in range(3)
    ]
    replies = [*calls, {"content": "done", "usage": usage}]

    def echo() -> str:
        """Say ok."""
        return "ok"

    agent = Agent(Scripted(replies), [echo], Session())
    assert agent.run_sync("go") == "done"
    spend = agent.meter.spend
    assert spend.requests == 4 and spend.usage.prompt_tokens == 40
    assert agent.meter.ledger.requests == []
    assert len(Ledger.of_events(agent.session.events).requests) == 4  # a report still has them
