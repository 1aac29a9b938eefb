"""Compaction: fold the middle of a long session into a digest, recorded in the log.

``compactor`` holds the `Compactor` (trigger, plan, fold), ``planning`` what the planner needs
from Python, ``summary`` the summary call and its mechanical fallback; ``probes`` and ``survival`` the
benchmark's probes and tier 0 (`probe_survival`, docs/compaction-benchmark.md).
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
from foldlog.compaction.probes import Probe
from foldlog.compaction.survival import SurvivalReport, probe_survival

__all__ = [
    "ELISION",
    "CompactionPreview",
    "CompactionResult",
    "Compactor",
    "Probe",
    "SurvivalReport",
    "probe_survival",
    "unfinished_compaction",
    "write_archive",
]
