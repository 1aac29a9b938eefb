"""The digest's text markers and the prune placeholder the planner recognises.

The planner's input is built by the core only (``Session.plan_history``): per-message token
counts from the session's tokenizer (exact counts kept in the log, or the core's calibrated
estimate), roles, the call links and the flags of ``spec/compaction.md``; its settings are
`foldlog.compaction.settings.CompactionSettings`. A digest is known from the log (a
``user/message`` whose surface op is a fold), never from its text, so the markers below only
*write* a digest.
"""

from __future__ import annotations

from foldlog import _core

DIGEST_OPEN = "<compaction-summary>"
DIGEST_CLOSE = "</compaction-summary>"
DIGEST_HEADER = "Summary of earlier conversation (older messages were compacted to save context):"
ELIDED_PREFIX: str = _core.ELIDED_PREFIX  # how the core recognises a pruned tool result


__all__ = ["DIGEST_CLOSE", "DIGEST_HEADER", "DIGEST_OPEN", "ELIDED_PREFIX"]
