"""The compaction constants (`CompactionOptions`, part of `foldlog.Options`) and the settings a
:class:`foldlog.compaction.Compactor` runs with (`CompactionSettings`: the constants and the
resolved context window), given to it once.

`foldlog.Options.compaction(window)` builds the settings from a run's options with the window
resolved (the options', else the provider's); the compactor never reads the options or asks the
provider for its window itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from foldlog.errors import ConfigError

if TYPE_CHECKING:
    from foldlog.providers.base import Provider

KeepPolicy = Literal["errors", "user_marked", "none"]
KEEP_POLICIES: tuple[KeepPolicy, ...] = ("errors", "user_marked", "none")


@dataclass(slots=True, kw_only=True)
class CompactionOptions:
    """The constants of spec/compaction.md, checked when made (`ConfigError` names the field)."""

    soft_compact_ratio: float = 0.5
    compact_ratio: float = 0.8
    force_compact_ratio: float = 0.9
    tail_tokens: int = 16384
    min_recent_keep: int = 2
    pinned_user_turn_tokens: int = 1500
    min_fold_tokens: int = 400
    summary_timeout: float = 90.0
    stuck_limit: int = 2
    prune_min_bytes: int = 1024
    keep_policy: KeepPolicy = "errors"
    summary_provider: Provider | None = None
    archive_dir: str | None = None

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.keep_policy not in KEEP_POLICIES:
            raise ConfigError(f"{owner}.keep_policy must be one of {KEEP_POLICIES}, got {self.keep_policy!r}")
        if not 0 < self.soft_compact_ratio <= self.compact_ratio <= self.force_compact_ratio <= 1:
            raise ConfigError(
                f"{owner} ratios must satisfy "
                "0 < soft_compact_ratio <= compact_ratio <= force_compact_ratio <= 1"
            )


@dataclass(slots=True, kw_only=True)
class CompactionSettings(CompactionOptions):
    """What a compactor runs with. ``window`` is the context window in tokens; 0 (unknown) means
    the trigger never fires (a manual compaction still plans, with the planner's defaults)."""

    window: int = 0

    def plan_kwargs(self, *, force: bool) -> dict[str, Any]:
        """The planner's settings (``PlanHistory.plan``'s keyword arguments)."""
        return {
            "context_window": self.window,
            "tail_tokens": self.tail_tokens,
            "min_recent_keep": self.min_recent_keep,
            "pinned_user_turn_tokens": self.pinned_user_turn_tokens,
            "min_fold_tokens": self.min_fold_tokens,
            "keep_policy": self.keep_policy,
            "force": force,
            "prune_min_bytes": self.prune_min_bytes,
        }


__all__ = ["KEEP_POLICIES", "CompactionOptions", "CompactionSettings", "KeepPolicy"]
