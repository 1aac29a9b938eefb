"""Agent options: the loop's limits and the compaction constants (see spec/compaction.md).

`Options` is what a user sets; the layers below get small typed views of it, once:
`Options.tool_limits` (the tool runner's bounds) and `Options.compaction` (the compactor's
settings, with the context window resolved).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from foldlog.compaction.settings import CompactionOptions, CompactionSettings, check_int, check_number
from foldlog.errors import ConfigTypeError
from foldlog.tools.host import ARGUMENT_LIMIT, ToolLimits

_OWNER = "Options"


@dataclass(slots=True)
class Options(CompactionOptions):
    """Every knob of a run. Defaults follow the spec; ``None`` limits mean unbounded.

    The compaction constants (`CompactionOptions`: ``soft_compact_ratio``, ``compact_ratio``,
    ``force_compact_ratio``, ``tail_tokens``, ``min_recent_keep``, ``pinned_user_turn_tokens``,
    ``min_fold_tokens``, ``summary_timeout``, ``stuck_limit``, ``prune_min_bytes``,
    ``keep_policy``, ``summary_provider``, ``archive_dir``, ``strategy``) are keyword-only."""

    max_steps: int | None = 50
    grace_step: bool = True
    max_parallel_tools: int = 8
    tool_output_limit: int = 32768
    tool_timeout: float | None = None
    # a call whose arguments are larger (UTF-8 bytes) gets an error result instead of running
    tool_argument_limit: int | None = ARGUMENT_LIMIT
    # the context window in tokens (None: the provider's)
    context_window: int | None = None
    # request parameters (the `request` hook may still change them per call); `model` None: the
    # provider's
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
    # --- budgets (foldlog.cost, docs/cost.md) ---
    # a request starts only while the session (its sub-agents included) has spent less than
    # `cost_limit` (in the price table's currency: USD for genai-prices) and used fewer than
    # `token_budget` tokens (prompt + completion); then the turn ends `budget` and BudgetExceeded
    # is raised. A cost limit needs a priced model (checked when the agent is made). None: unbounded.
    cost_limit: float | None = None
    token_budget: int | None = None
    # typed output (`Agent.run(output_type=…)`): replies that do not validate sent back to the
    # model, naming the failing fields, before `OutputValidationError` (docs/output.md)
    output_retries: int = 2
    # `Agent.resume` (docs/durable-runs.md): a call cut off before its result was stored runs
    # again only when its tool is read_only or idempotent, else it gets an error result saying so;
    # True runs every such call again (for tools whose repeated side effect does no harm)
    rerun_interrupted: bool = False

    def __post_init__(self) -> None:
        # every bad value is refused here, naming the option, not later by whatever first uses it
        check_int(_OWNER, "max_steps", self.max_steps, 1, optional=True)
        check_int(_OWNER, "max_parallel_tools", self.max_parallel_tools, 1)
        check_int(_OWNER, "tool_output_limit", self.tool_output_limit, 64)
        check_int(_OWNER, "tool_argument_limit", self.tool_argument_limit, 1, optional=True)
        check_number(_OWNER, "tool_timeout", self.tool_timeout, 0.0, inclusive=False, optional=True)
        # 0 is not "unknown" here: None is (the provider's window)
        check_int(_OWNER, "context_window", self.context_window, 1, optional=True)
        check_int(_OWNER, "max_tokens", self.max_tokens, 1, optional=True)
        check_number(_OWNER, "temperature", self.temperature, 0.0, optional=True)
        check_int(_OWNER, "max_stream_retries", self.max_stream_retries, 0)
        check_number(_OWNER, "cost_limit", self.cost_limit, 0.0, optional=True)
        check_int(_OWNER, "token_budget", self.token_budget, 0, optional=True)
        check_int(_OWNER, "output_retries", self.output_retries, 0)
        for flag in (
            "grace_step",
            "debug_invariants",
            "record_chunks",
            "release_when_idle",
            "rerun_interrupted",
        ):
            if not isinstance(getattr(self, flag), bool):
                raise ConfigTypeError(f"Options.{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.model is not None and not isinstance(self.model, str):
            raise ConfigTypeError(f"Options.model must be a string or None, got {type(self.model).__name__}")
        CompactionOptions.__post_init__(self)  # (zero-argument super() fails in a slots dataclass)

    @property
    def check_invariants(self) -> bool:
        return self.debug_invariants or os.environ.get("FOLDLOG_DEBUG") == "1"

    @property
    def tool_limits(self) -> ToolLimits:
        """The bounds the tool runner keeps."""
        return ToolLimits(
            max_parallel=self.max_parallel_tools,
            output_limit=self.tool_output_limit,
            timeout=self.tool_timeout,
            argument_limit=self.tool_argument_limit,
        )

    def compaction(self, window: int | None = None) -> CompactionSettings:
        """The compactor's settings; ``window``: the resolved context window (default: this
        `context_window`; 0 or None: unknown)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(CompactionOptions)}
        return CompactionSettings(window=int(window or self.context_window or 0), **fields)
