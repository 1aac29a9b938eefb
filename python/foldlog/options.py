"""Agent options: the loop's limits and the compaction constants (see spec/compaction.md)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from foldlog.providers.base import Provider

KeepPolicy = Literal["errors", "user_marked", "none"]
_KEEP_POLICIES = ("errors", "user_marked", "none")


@dataclass(slots=True)
class Options:
    """Every knob of a run. Defaults follow the spec; ``None`` limits mean unbounded."""

    max_steps: int | None = 50
    grace_step: bool = True
    max_parallel_tools: int = 8
    tool_output_limit: int = 32768
    tool_timeout: float | None = None
    # a call whose arguments are larger (UTF-8 bytes) gets an error result instead of running
    tool_argument_limit: int | None = 4 * 1024 * 1024
    context_window: int | None = None
    # compaction (consumed by foldlog.compaction)
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
    # request parameters (the `request` hook may still change them per call)
    model: str | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    # check the request invariant (messages == session.wire_messages()) on every request
    debug_invariants: bool = False
    # StreamInterrupted retries per turn (each adds a short "continue" user message)
    max_stream_retries: int = 3
    # record every stream chunk as an `assistant/chunk` event as it arrives (token-level replay);
    # the assistant message then lists them in `sourceEventSeqs`. Off: one event per reply.
    record_chunks: bool = False
    # release the session (`Session.release`) when a run ends and the agent is idle: its events,
    # derived messages and request caches are dropped and loaded again, from its store, at the
    # next run. On by default: a host keeps thousands of idle sessions, and loading a log back is
    # far cheaper than the model call that follows it (counts travel in the log: nothing is
    # tokenized again). Off keeps the log in memory between runs (one session, a huge log).
    release_when_idle: bool = True

    def __post_init__(self) -> None:
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"Options.max_steps must be >= 1 or None, got {self.max_steps}")
        if self.max_parallel_tools < 1:
            raise ValueError(f"Options.max_parallel_tools must be >= 1, got {self.max_parallel_tools}")
        if self.tool_output_limit < 64:
            raise ValueError(f"Options.tool_output_limit must be >= 64, got {self.tool_output_limit}")
        if self.tool_argument_limit is not None and self.tool_argument_limit < 1:
            raise ValueError(
                f"Options.tool_argument_limit must be >= 1 or None, got {self.tool_argument_limit}"
            )
        if self.tool_timeout is not None and self.tool_timeout <= 0:
            raise ValueError(f"Options.tool_timeout must be > 0 or None, got {self.tool_timeout}")
        if self.keep_policy not in _KEEP_POLICIES:
            raise ValueError(f"Options.keep_policy must be one of {_KEEP_POLICIES}, got {self.keep_policy!r}")
        if not 0 < self.soft_compact_ratio <= self.compact_ratio <= self.force_compact_ratio <= 1:
            raise ValueError(
                "Options ratios must satisfy "
                "0 < soft_compact_ratio <= compact_ratio <= force_compact_ratio <= 1"
            )

    @property
    def check_invariants(self) -> bool:
        return self.debug_invariants or os.environ.get("FOLDLOG_DEBUG") == "1"
