"""What sessions and summaries cost, for the batch jobs: the cost layer's own rules
(`foldlog.cost`: prices from `genai-prices`, each request at the time it was made, costs the log
recorded taken as recorded, sub-agents rolled up) — nothing priced here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldlog.log.session import Session


def session_cost(session: Session, model: str | None = None) -> tuple[float | None, str | None]:
    """``(cost, currency)`` of a session's requests, as `foldlog log inspect` reports it
    (``model``: the model of requests whose log names none); ``(None, None)`` when none is priced."""
    from foldlog.cost.ledger import session_ledger

    spend = session_ledger(session, model=model).session
    if spend.requests == spend.unpriced:
        return None, None
    return spend.cost, spend.currency


def usage_cost(usage: Mapping[str, Any], model: str | None) -> tuple[float | None, str | None]:
    """``(cost, currency)`` of summed usage (the log's keys: ``promptTokens``, ``cacheHitTokens``,
    …) priced now at ``model``; ``(None, None)`` when the model has no known price."""
    from foldlog.cost.prices import price_request
    from foldlog.log.grammar.types import Usage

    cost = price_request(Usage.from_dict(usage), model)
    return (cost.total, cost.currency) if cost is not None else (None, None)


__all__ = ["session_cost", "usage_cost"]
