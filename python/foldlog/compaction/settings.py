"""The compaction constants (`CompactionOptions`, part of `foldlog.Options`) and the settings a
:class:`foldlog.compaction.Compactor` runs with (`CompactionSettings`: the constants and the
resolved context window), given to it once.

`foldlog.Options.compaction(window)` builds the settings from a run's options with the window
resolved (the options', else the provider's); the compactor never reads the options or asks the
provider for its window itself.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from foldlog.errors import ConfigError, ConfigTypeError

if TYPE_CHECKING:
    from foldlog.providers.base import Provider

KeepPolicy = Literal["errors", "user_marked", "none"]
KEEP_POLICIES: tuple[KeepPolicy, ...] = ("errors", "user_marked", "none")

#: how a compaction makes room (docs/compaction.md, "Strategies"): ``mask`` replaces old tool
#: results by stubs (calls kept); ``mechanical`` folds into the structured digest without a model;
#: ``summary`` folds into a model's summary (the digest when it fails); ``hybrid`` masks first and
#: summarises only when masking does not get the surface under the trigger
Strategy = Literal["mask", "mechanical", "summary", "hybrid"]
STRATEGIES: tuple[Strategy, ...] = ("mask", "mechanical", "summary", "hybrid")

#: the largest whole number a setting may hold (the core takes them as 64-bit integers)
MAX_INT = 2**63 - 1


def check_int(owner: str, name: str, value: object, minimum: int, *, optional: bool = False) -> None:
    """Refuse a setting that is not a whole number in ``[minimum, MAX_INT]`` (``None`` too when
    ``optional``), naming it: ``Options.tail_tokens must be >= 0, got -5``. A bool is not a
    number here (``True`` would pass as 1)."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        what = "a whole number" + (" or None" if optional else "")
        raise ConfigTypeError(f"{owner}.{name} must be {what}, got {type(value).__name__} {value!r}")
    if value < minimum:
        raise ConfigError(f"{owner}.{name} must be >= {minimum}{' or None' if optional else ''}, got {value}")
    if value > MAX_INT:
        raise ConfigError(f"{owner}.{name} must be at most {MAX_INT}, got {value}")


def check_number(
    owner: str, name: str, value: object, minimum: float, *, inclusive: bool = True, optional: bool = False
) -> None:
    """Refuse a setting that is not a finite number ``>= minimum`` (``> minimum`` unless
    ``inclusive``; ``None`` too when ``optional``), naming it."""
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        what = "a number" + (" or None" if optional else "")
        raise ConfigTypeError(f"{owner}.{name} must be {what}, got {type(value).__name__} {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{owner}.{name} must be a finite number, got {value!r}")
    if value < minimum or (value == minimum and not inclusive):
        op = ">=" if inclusive else ">"
        raise ConfigError(
            f"{owner}.{name} must be {op} {minimum:g}{' or None' if optional else ''}, got {value!r}"
        )


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
    strategy: Strategy = "summary"

    def __post_init__(self) -> None:
        owner = type(self).__name__
        if self.strategy not in STRATEGIES:
            raise ConfigError(f"{owner}.strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.keep_policy not in KEEP_POLICIES:
            raise ConfigError(f"{owner}.keep_policy must be one of {KEEP_POLICIES}, got {self.keep_policy!r}")
        for ratio in ("soft_compact_ratio", "compact_ratio", "force_compact_ratio"):
            check_number(owner, ratio, getattr(self, ratio), 0.0, inclusive=False)
        # each bound of spec/compaction.md: what a value below it would mean is nothing usable
        check_int(owner, "tail_tokens", self.tail_tokens, 0)
        check_int(owner, "min_recent_keep", self.min_recent_keep, 1)
        check_int(owner, "pinned_user_turn_tokens", self.pinned_user_turn_tokens, 0)
        check_int(owner, "min_fold_tokens", self.min_fold_tokens, 0)
        check_number(owner, "summary_timeout", self.summary_timeout, 0.0, inclusive=False)
        check_int(owner, "stuck_limit", self.stuck_limit, 1)
        check_int(owner, "prune_min_bytes", self.prune_min_bytes, 0)
        if self.archive_dir is not None and not isinstance(self.archive_dir, (str, os.PathLike)):
            raise ConfigTypeError(
                f"{owner}.archive_dir must be a folder path or None, got {type(self.archive_dir).__name__}"
            )
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

    def __post_init__(self) -> None:
        CompactionOptions.__post_init__(self)  # (zero-argument super() fails in a slots dataclass)
        check_int(type(self).__name__, "window", self.window, 0)

    @property
    def fold_target(self) -> int:
        """The kept-overflow rule's target (docs/compaction.md): kept messages that would hold
        the surface after a fold above it are folded too. Halfway between the soft notice and
        the trigger, so the digest and the next steps fit before the trigger fires again; 0
        without a window."""
        if self.window <= 0:
            return 0
        return int(self.window * (self.soft_compact_ratio + self.compact_ratio) / 2)

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
            "fold_target": self.fold_target,
        }


__all__ = [
    "KEEP_POLICIES",
    "MAX_INT",
    "STRATEGIES",
    "CompactionOptions",
    "CompactionSettings",
    "KeepPolicy",
    "Strategy",
    "check_int",
    "check_number",
]
