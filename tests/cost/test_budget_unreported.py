"""`Options.token_budget` holds when the provider reports no usage: each request's prompt and
reply are counted locally with the session's tokenizer (issue 26: six requests ran under a
50-token budget)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldlog import Agent, BudgetExceeded, Options, Session, tool
from foldlog.cost.ledger import Spend
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, of_type


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def _silent_steps(n: int) -> list[dict[str, Any]]:
    """``n`` tool steps then an answer, none of them reporting usage."""
    steps: list[dict[str, Any]] = [
        {"content": "", "tool_calls": [call("lookup", {"key": f"k{i}"}, f"c{i}")]} for i in range(n)
    ]
    return [*steps, {"content": "done"}]


def _run(budget: int, session: Session, model: str) -> tuple[Scripted, BudgetExceeded | None]:
    p = Scripted(_silent_steps(6), model=model)
    agent = Agent(p, [lookup], session, Options(token_budget=budget))
    try:
        agent.run_sync("look up six keys")
    except BudgetExceeded as e:
        return p, e
    return p, None


def test_a_tiny_budget_stops_after_the_first_unreported_request() -> None:
    p, err = _run(50, Session(system="You look things up."), "deepseek-v4-flash")
    assert p.calls == 1  # before: all 7 requests ran
    assert isinstance(err, BudgetExceeded) and err.limit == "tokens"
    assert isinstance(err.used, int) and err.used >= 50


def test_unreported_requests_are_counted_as_prompt_plus_reply() -> None:
    session = Session(system="You look things up.")
    model = "deepseek-v4-flash"  # an exact tokenizer: the counts are the log's own
    p, err = _run(10_000, session, model)
    assert err is None and p.calls == 7
    tok = session.tokenizer(model)
    messages = session.derive_messages()
    replies = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    expected = sum(
        int(tok.count_request(messages[:i])) + int(tok.count_message(messages[i])) for i in replies
    )
    spend = Agent(Scripted([]), [], session, Options(token_budget=10_000)).meter.spend
    assert spend.usage.total_tokens == 0  # nothing was reported
    assert spend.counted_tokens == expected and spend.tokens == expected
    # an estimating tokenizer counts too
    p2, err2 = _run(200, Session(system="s"), "some-unknown-model")
    assert isinstance(err2, BudgetExceeded) and p2.calls < 7


def test_a_resumed_session_counts_its_unreported_history(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Session.open(path, system="You look things up.") as s:
        _, err = _run(10_000, s, "deepseek-v4-flash")
        assert err is None
        used = Agent(Scripted([]), [], s, Options(token_budget=1)).meter.spend.tokens
    resumed = Session.open(path)
    try:
        p2, err2 = _run(used, resumed, "deepseek-v4-flash")  # already at the budget
        assert p2.calls == 0 and isinstance(err2, BudgetExceeded)
        assert of_type(resumed, "turn/end")[-1]["data"]["reason"]["kind"] == "budget"
    finally:
        resumed.close()


def test_counted_tokens_round_trip_in_a_sub_agents_spend() -> None:
    spend = Spend(counted_tokens=42)
    back = Spend.from_dict(spend.to_dict())
    assert back.counted_tokens == 42 and back.tokens == 42
