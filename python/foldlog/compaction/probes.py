"""Probes: questions a fold's reader should still answer, generated from what the fold folds.

Pure functions over the session's derived messages and the plan a fold follows
(`Compactor.plan`): nothing is sent to a model and nothing is guessed beyond the documented rules
(docs/compaction-benchmark.md, "Probes"). A probe's evidence is one folded message; a message the
fold leaves on the surface (the pinned prefix, kept messages, the tail) is never evidence, so
every probe asks about something that only the fold can keep.

Categories: ``artifact`` (files created, edited, read or deleted: from tool-call arguments, patch
headers and the obvious operands of a few shell commands), ``error`` (failing calls not fixed by a
later successful run of the same command, or the same tool on the same file), ``constraint``
(user-turn sentences that instruct: must, never, always, …), ``identifier`` (UUIDs, hex ids,
``#123``, version strings, ticket keys, URLs, CONSTANT_NAMES in user turns and tool results) and
``decision`` (the latest todo / plan state, free text, not scored by tier 0). The facts are
extracted by :mod:`foldlog.compaction.facts`, the same functions the mechanical digest writes from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from foldlog.compaction.facts import (
    Folded,
    artifact_calls,
    constraints,
    files_touched,
    identifiers,
    identifiers_found,
    is_error_result,
    last_plan,
    normalize_path,
    path_answers,
    shell_files,
    surface_before,
    unresolved_errors,
)
from foldlog.errors import ConfigError

if TYPE_CHECKING:
    from foldlog.compaction.compactor import CompactionPreview
    from foldlog.log.session import Session

Category = Literal["artifact", "error", "constraint", "identifier", "decision"]
#: the categories tier 0 scores (``decision`` probes are free text, for a judge)
SCORED: tuple[Category, ...] = ("artifact", "error", "constraint", "identifier")
CATEGORIES: tuple[Category, ...] = (*SCORED, "decision")
#: probes per category per session: the latest evidence first (see `cap_latest`)
DEFAULT_CAP = 50


@dataclass(frozen=True, slots=True)
class Probe:
    """One question about the folded part: ``answers`` are accepted answers (any one counts),
    ``seq`` the log seq of the folded message holding its evidence."""

    category: Category
    question: str
    answers: tuple[str, ...]
    seq: int


def generate(surface: Sequence[Folded], cap: int = DEFAULT_CAP) -> list[Probe]:
    """Every probe of one fold, in category order (`CATEGORIES`), each category capped at ``cap``."""
    if cap < 1:
        raise ConfigError(f"cap: the probes per category must be at least 1, got {cap}")
    out: list[Probe] = []
    out += cap_latest(artifact_probes(surface), cap)
    out += cap_latest(error_probes(surface), cap)
    out += cap_latest(constraint_probes(surface), cap)
    out += cap_latest(identifier_probes(surface), cap)
    out += decision_probes(surface)
    return out


def probes_for_plan(session: Session, preview: CompactionPreview, cap: int = DEFAULT_CAP) -> list[Probe]:
    """The probes of the fold ``preview`` plans on ``session`` (call it before folding)."""
    return generate(surface_before(session, preview), cap)


def cap_latest(probes: Sequence[Probe], cap: int) -> list[Probe]:
    """At most ``cap`` probes: those with the latest evidence (ties: the order found), returned
    in evidence order."""
    ranked = sorted(range(len(probes)), key=lambda k: (-probes[k].seq, k))[:cap]
    return [probes[k] for k in sorted(ranked, key=lambda k: (probes[k].seq, k))]


def artifact_probes(surface: Sequence[Folded]) -> list[Probe]:
    """One probe per distinct file the folded calls touched (`files_touched`); its question
    names the last action."""
    return [
        Probe(
            "artifact",
            f"Which file was {f.verb} with the {f.tool} tool (event #{f.seq})? Give its path.",
            path_answers(f.path),
            f.seq,
        )
        for f in files_touched(surface)
    ]


def error_probes(surface: Sequence[Folded]) -> list[Probe]:
    """A folded failing call not run successfully later (`unresolved_errors`)."""
    return [
        Probe(
            "error",
            f"Which {e.tool} call failed (event #{e.seq}) and was not run successfully later? "
            "Give its command, file or error.",
            (e.subject,),
            e.seq,
        )
        for e in unresolved_errors(surface)
    ]


def constraint_probes(surface: Sequence[Folded]) -> list[Probe]:
    """Each of the user's instructing sentences in the folded part (`constraints`), verbatim."""
    return [
        Probe("constraint", f"What did the user instruct (event #{c.seq})? Quote it.", (c.text,), c.seq)
        for c in constraints(surface)
    ]


def identifier_probes(surface: Sequence[Folded]) -> list[Probe]:
    """Each distinct identifier of the folded user turns and tool results (`identifiers_found`)."""
    return [
        Probe(
            "identifier",
            f"Which {i.kind} did {'the user' if i.by_user else 'a tool result'} mention (event #{i.seq})?",
            (i.value,),
            i.seq,
        )
        for i in identifiers_found(surface)
    ]


def decision_probes(surface: Sequence[Folded]) -> list[Probe]:
    """The latest plan / todo state of the surface (TodoWrite, update_plan), when the fold folds
    it (a later one on the surface supersedes it: no probe)."""
    plan = last_plan(surface)
    if plan is None or not plan.folded:
        return []
    return [Probe("decision", f"What was the plan / todo state (event #{plan.seq})?", (plan.text,), plan.seq)]


__all__ = [
    "CATEGORIES",
    "DEFAULT_CAP",
    "SCORED",
    "Category",
    "Folded",
    "Probe",
    "artifact_calls",
    "generate",
    "identifiers",
    "is_error_result",
    "normalize_path",
    "path_answers",
    "probes_for_plan",
    "shell_files",
    "surface_before",
]
