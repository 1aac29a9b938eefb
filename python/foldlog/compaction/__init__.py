"""Compaction: fold the middle of a long session into a digest, recorded in the log.

``compactor`` holds the `Compactor` (trigger, plan, fold), ``planning`` what the planner needs
from Python, ``summary`` the summary call and its mechanical fallback.
"""

from __future__ import annotations

from foldlog.compaction.compactor import (
    ELISION,
    CompactionPreview,
    CompactionResult,
    Compactor,
    unfinished_compaction,
    write_archive,
)

__all__ = [
    "ELISION",
    "CompactionPreview",
    "CompactionResult",
    "Compactor",
    "unfinished_compaction",
    "write_archive",
]
