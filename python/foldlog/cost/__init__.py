"""Costs and budgets: requests priced by `genai-prices` (``foldlog[cost]``), spending per
request, turn and session read from the log (`Ledger`), and the agent's budget (`AgentMeter`).
See docs/cost.md."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes

_LAZY = by_module(
    {
        "foldlog.cost.meter": ("AgentMeter",),
        "foldlog.cost.prices": ("Cost", "FALLBACK_PRICES", "Price", "price_request"),
        "foldlog.cost.ledger": ("Ledger", "RequestCost", "Spend", "session_ledger"),
    }
)

if TYPE_CHECKING:
    from foldlog.cost.ledger import Ledger, RequestCost, Spend, session_ledger
    from foldlog.cost.meter import AgentMeter
    from foldlog.cost.prices import FALLBACK_PRICES, Cost, Price, price_request

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)
__all__ = [
    "FALLBACK_PRICES",
    "AgentMeter",
    "Cost",
    "Ledger",
    "Price",
    "RequestCost",
    "Spend",
    "price_request",
    "session_ledger",
]
