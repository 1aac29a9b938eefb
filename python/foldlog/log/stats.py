"""The counts of a session's log, as ``foldlog log inspect`` and ``foldlog batch stats`` show them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldlog.log.session import Session


def log_stats(session: Session) -> dict[str, Any]:
    """Counts of the log as stored (the events the load repair added are left out) and of its
    surface: ``events``, ``types``, ``turns``, ``steps``, ``messages`` (by role),
    ``surface_messages``, ``tool_calls``, ``tool_results``, ``compactions``,
    ``unfinished_compactions`` and ``usage`` (summed) — computed by the core."""
    with session._lock:
        core = session._core
        stored = len(core) - int(session.repair_report.get("events_added", 0))
        return core.stats(stored)


__all__ = ["log_stats"]
