"""Compaction: fold the middle of a long session into a digest, recorded in the log.

``compactor`` holds the `Compactor` (trigger, plan, fold), ``planning`` what the planner needs
from Python, ``summary`` the summary call, ``digest`` the structured digest (the mechanical fold's
text, and the facts a summary must keep); ``facts`` (with ``call_paths``) the one extraction of the
folded part's files, commands, errors, instructions, identifiers and plan, which ``digest`` and
``probes`` share; ``probes`` and ``survival`` the benchmark's probes and tier 0 (`probe_survival`,
docs/compaction-benchmark.md).
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
