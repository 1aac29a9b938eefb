"""The agent layer: turns and steps over a session log (``loop``), its options, inbox and
sub-agents. `Agent` loads on first use so that importing a part of the layer stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes

_LAZY = by_module(
    {
        "foldlog.agent.loop": ("Agent",),
    }
)

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)

__all__ = ["Agent"]
