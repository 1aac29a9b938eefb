"""What the compaction planner needs from Python: the digest's text markers and the planner
settings of an :class:`foldlog.Options`.

The planner's input is built by the core only (``Session.plan_history``): per-message token
counts from the session's tokenizer (exact counts kept in the log, or the core's calibrated
estimate), roles, the call links and the flags of ``spec/compaction.md``. A digest is known from
the log (a ``user/message`` whose surface op is a fold), never from its text, so the markers
below only *write* a digest.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foldlog import _core

DIGEST_OPEN = "<compaction-summary>"
DIGEST_CLOSE = "</compaction-summary>"
DIGEST_HEADER = "Summary of earlier conversation (older messages were compacted to save context):"
ELIDED_PREFIX: str = _core.ELIDED_PREFIX  # how the core recognises a pruned tool result


def message_text(m: Mapping[str, Any]) -> str:
    """The words of a chat message: a string content, or its text blocks joined with a newline
    (the core's rule, ``foldlog._core.message_text``)."""
    return _core.message_text(m)


def plan_kwargs(options: Any, *, force: bool) -> dict[str, Any]:
    """The planner settings of an :class:`foldlog.Options` (or any object with its fields)."""
    return {
        "context_window": int(options.context_window or 0),
        "tail_tokens": int(options.tail_tokens),
        "min_recent_keep": int(options.min_recent_keep),
        "pinned_user_turn_tokens": int(options.pinned_user_turn_tokens),
        "min_fold_tokens": int(options.min_fold_tokens),
        "keep_policy": str(options.keep_policy),
        "force": force,
        "prune_min_bytes": int(options.prune_min_bytes),
    }


__all__ = [
    "DIGEST_CLOSE",
    "DIGEST_HEADER",
    "DIGEST_OPEN",
    "ELIDED_PREFIX",
    "message_text",
    "plan_kwargs",
]
