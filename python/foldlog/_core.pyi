"""Type stubs for the Rust extension ``foldlog._core``."""

from collections.abc import Sequence
from typing import Final, final

__version__: str

# --- compaction planning (rust/foldlog-py/src/plan.rs) ---------------------------------------

PLAN_DIGEST: Final[int]
PLAN_USER_MARKED: Final[int]
PLAN_ERROR_RESULT: Final[int]
PLAN_ELIDED: Final[int]

@final
class CompactionPlan:
    """The result of planning a compaction. Indices refer to the planned history."""

    @property
    def head(self) -> int: ...
    @property
    def tail_start(self) -> int: ...
    @property
    def kept(self) -> list[int]: ...
    @property
    def fold(self) -> list[int]: ...
    @property
    def fold_count(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def fold_tokens(self) -> int: ...
    @property
    def skipped(self) -> str | None: ...
    @property
    def should_fold(self) -> bool: ...

@final
class PlanHistory:
    """Per-message planner facts, cached in Rust."""

    def __new__(cls) -> PlanHistory: ...
    def __len__(self) -> int: ...
    def append(
        self,
        role: str,
        tokens: int,
        *,
        digest: bool = False,
        user_marked: bool = False,
        error: bool = False,
        elided: bool = False,
        caller: int | None = None,
        nbytes: int = 0,
    ) -> None: ...
    def extend(
        self,
        roles: str,
        tokens: Sequence[int],
        flags: Sequence[int] | None = None,
        callers: Sequence[int] | None = None,
        nbytes: Sequence[int] | None = None,
    ) -> None: ...
    def truncate(self, length: int) -> None: ...
    def clear(self) -> None: ...
    def tokens(self) -> list[int]: ...
    def plan(
        self,
        *,
        context_window: int,
        tail_tokens: int = 16384,
        min_recent_keep: int = 2,
        pinned_user_turn_tokens: int = 1500,
        min_fold_tokens: int = 400,
        keep_policy: str = "errors",
        force: bool = False,
        prune_min_bytes: int = 1024,
    ) -> CompactionPlan: ...
    def prune_candidates(self, plan: CompactionPlan, prune_min_bytes: int = 1024) -> list[int]: ...
