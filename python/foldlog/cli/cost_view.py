"""Costs as the CLI shows them (`foldlog sessions`, `log inspect`, chat ``/cost``, the run's
usage line): read from the log by `foldlog.cost.Ledger`, never summed here."""

from __future__ import annotations

from typing import Any

from foldlog.cost.ledger import Ledger, Spend


def money(amount: float, currency: str | None) -> str:
    """``0.001234 USD``: six decimals (requests cost fractions of a cent)."""
    return f"{amount:.6f} {currency or 'USD'}"


def spend_text(spend: Spend) -> str:
    """``0.001234 USD`` (``+ 2 unpriced``), or ``-`` when nothing was priced."""
    if spend.requests and spend.unpriced == spend.requests:
        return f"- ({spend.unpriced} unpriced)"
    if not spend.requests:
        return "-"
    extra = f" + {spend.unpriced} unpriced" if spend.unpriced else ""
    return money(spend.cost, spend.currency) + extra


def ledger_of(session: Any, *, price_missing: bool = True) -> Ledger:
    return Ledger.of_events(session.events, price_missing=price_missing)


def cost_report(ledger: Ledger) -> dict[str, Any]:
    """The ``cost`` entry of ``log inspect --json``: the session, by kind, per turn, sub-agents."""
    return {
        **ledger.session.to_dict(),
        "turns": {str(t): s.to_dict() for t, s in sorted(ledger.turns.items())},
        "subagents": [
            {"callId": call, "session": child, **spend.to_dict()} for call, child, spend in ledger.subagents
        ],
    }


def cost_lines(ledger: Ledger) -> list[str]:
    """The chat's ``/cost``: the session total, by kind of token, per turn and per sub-agent."""
    s = ledger.session
    cur = s.currency
    lines = [
        f"session  {spend_text(s)}  ({s.requests} request(s), {s.usage.prompt_tokens} in / "
        f"{s.usage.completion_tokens} out tokens, {s.usage.cache_hit_tokens} cached)",
        f"  input {money(s.input, cur)}  cache reads {money(s.cache_read, cur)}  "
        f"cache writes {money(s.cache_write, cur)}  output {money(s.output, cur)}  "
        f"reasoning {money(s.reasoning, cur)}",
    ]
    for turn, t in sorted(ledger.turns.items()):
        lines.append(f"  turn {turn}: {spend_text(t)} ({t.requests} request(s), {t.tokens} tokens)")
    for call, child, spend in ledger.subagents:
        lines.append(f"  sub-agent {child or '?'} (call {call}): {spend_text(spend)}")
    return lines


__all__ = ["cost_lines", "cost_report", "ledger_of", "money", "spend_text"]
