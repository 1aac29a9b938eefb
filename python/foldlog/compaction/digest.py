"""The structured digest: what a fold without a model keeps of the folded part.

Computed from the folded messages alone by :mod:`foldlog.compaction.facts` — the same extraction
the benchmark's probes use — deterministically and within documented caps
(docs/compaction.md, "The mechanical digest"): the files touched with their last action, the shell
commands run with how they ended, the failing calls not fixed later, the user's instructing
sentences verbatim, and the plan / todo state when the fold folds it. It is the text of the
mechanical fold (``compaction/summary.summary`` with ``mechanical: true``); a model summary is
given its sections as facts to keep, and gets the ones it did not name appended (`complete`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

from foldlog.compaction.facts import (
    CommandFact,
    ConstraintFact,
    ErrorFact,
    FileFact,
    Folded,
    IdentifierFact,
    PlanFact,
    call_subject,
    commands_run,
    constraints,
    files_touched,
    identifiers_found,
    last_plan,
    normalize_path,
    path_answers,
    tool_results,
    unresolved_errors,
)
from foldlog.log.text import message_text

_Fact = TypeVar("_Fact", FileFact, CommandFact, ErrorFact, ConstraintFact, IdentifierFact)

#: entries kept per section, the latest first (files and constraints match the probes' cap)
FILES_CAP = 50
COMMANDS_CAP = 15
ERRORS_CAP = 20
CONSTRAINTS_CAP = 50
PLAN_ITEMS_CAP = 30
#: identifiers (ids, URLs, versions, ticket keys, constant names) of user turns and tool results:
#: what summaries lose first ("Lost in compaction"), and short, so many fit
IDENTIFIERS_CAP = 50
#: a command longer than this is written as its first `CLIP_TO` characters and "…" (the rule of
#: the error probes' answers)
CLIP_OVER = 200
CLIP_TO = 120
#: the section headings (also how an earlier digest folded again is read back: `carried`)
FILES_TITLE = "## Files touched (last action)"
COMMANDS_TITLE = "## Commands run (latest last)"
ERRORS_TITLE = "## Unresolved errors (not run successfully later)"
SAID_TITLE = "## The user's instructions (verbatim)"
PLAN_TITLE = "## Plan / todo state"
IDENTIFIERS_TITLE = "## Identifiers seen (ids, URLs, versions, keys)"
#: the digest's size in characters: at most a quarter of the folded messages' characters, within
#: these bounds (entries are dropped, least important and oldest first, until it fits)
MAX_CHARS = 16_000
MIN_CHARS = 1_500


@dataclass(frozen=True, slots=True)
class DigestFacts:
    """The facts a digest writes, each section in evidence order (the latest last)."""

    files: tuple[FileFact, ...]
    commands: tuple[CommandFact, ...]
    errors: tuple[ErrorFact, ...]
    constraints: tuple[ConstraintFact, ...]
    plan: tuple[str, ...]  # the folded plan's lines; empty when it is not folded (or none)
    identifiers: tuple[IdentifierFact, ...] = ()
    #: entries not listed, per section (files, commands, errors, instructions, plan items,
    #: identifiers)
    dropped: tuple[int, ...] = (0, 0, 0, 0, 0, 0)

    @property
    def empty(self) -> bool:
        return not (
            self.files or self.commands or self.errors or self.constraints or self.plan or self.identifiers
        )


def digest_facts(surface: Sequence[Folded]) -> DigestFacts:
    """The folded part's facts, with those of earlier digests it folds again (`carried`; a later
    fact of the same file, command or instruction replaces theirs), each section cut to its cap
    (the latest kept)."""
    old = carried(surface)
    plan: PlanFact | None = last_plan(surface)
    lines = tuple(plan.text.splitlines()) if plan is not None and plan.folded else ()
    if plan is None:
        lines = old.plan
    files = _latest([*old.files, *files_touched(surface)], lambda f: normalize_path(f.path).lower())
    commands = _latest([*old.commands, *commands_run(surface)], lambda c: clip(c.command).lower())
    errors = _latest([*old.errors, *unresolved_errors(surface)], lambda e: e.subject.lower())
    said = _latest([*old.constraints, *constraints(surface)], lambda c: c.text.lower())
    ids = _latest([*old.identifiers, *identifiers_found(surface)], lambda i: i.value.lower())
    return DigestFacts(
        tuple(files[-FILES_CAP:]),
        tuple(commands[-COMMANDS_CAP:]),
        tuple(errors[-ERRORS_CAP:]),
        tuple(said[-CONSTRAINTS_CAP:]),
        lines[:PLAN_ITEMS_CAP],
        tuple(ids[-IDENTIFIERS_CAP:]),
        (
            max(len(files) - FILES_CAP, 0),
            max(len(commands) - COMMANDS_CAP, 0),
            max(len(errors) - ERRORS_CAP, 0),
            max(len(said) - CONSTRAINTS_CAP, 0),
            max(len(lines) - PLAN_ITEMS_CAP, 0),
            max(len(ids) - IDENTIFIERS_CAP, 0),
        ),
    )


def _latest(facts: Sequence[_Fact], key: Callable[[_Fact], str]) -> list[_Fact]:
    """One fact per key, the one with the latest seq (ties: the later in ``facts``), in seq order."""
    out: dict[str, _Fact] = {}
    for f in sorted(facts, key=lambda f: f.seq):
        out.pop(key(f), None)
        out[key(f)] = f
    return list(out.values())


_FILE_LINE = re.compile(r"^- (\w+): (.+)$")
_COMMAND_LINE = re.compile(r"^- \[([^\]]+)\] (.+)$")
_ERROR_LINE = re.compile(r"^- ([^:]+): (.+?)(?: — (.*))?$")
_IDENTIFIER_LINE = re.compile(r"^- ([\w ]+) \((user|tool)\): (.+)$")


def carried(surface: Sequence[Folded]) -> DigestFacts:
    """The sections of the earlier digests this fold folds again (the kept-overflow rule), read
    back from their text, each fact at the digest's seq; an error is dropped when a later result
    of the same command or file did not fail. A model summary's own headings are not read."""
    files: list[FileFact] = []
    commands: list[CommandFact] = []
    errors: list[ErrorFact] = []
    said: list[ConstraintFact] = []
    ids: list[IdentifierFact] = []
    plan: tuple[str, ...] = ()
    for m in surface:
        if not (m.folded and m.digest):
            continue
        section, steps = "", []
        for line in message_text(m.message).splitlines():
            if line.startswith("## ") or line.startswith("</"):
                section = line.strip()
                continue
            if not line.strip() or line.startswith("- … "):
                continue
            hit = _FILE_LINE.match(line) if section == FILES_TITLE else None
            if hit:
                files.append(FileFact(m.seq, hit.group(1), "digest", hit.group(2)))
            hit = _COMMAND_LINE.match(line) if section == COMMANDS_TITLE else None
            if hit:
                commands.append(CommandFact(m.seq, "digest", hit.group(2), hit.group(1)))
            hit = _ERROR_LINE.match(line) if section == ERRORS_TITLE else None
            if hit:
                errors.append(ErrorFact(m.seq, hit.group(1), hit.group(2), hit.group(3) or ""))
            if section == SAID_TITLE and line.startswith("- "):
                said.append(ConstraintFact(m.seq, line[2:]))
            hit = _IDENTIFIER_LINE.match(line) if section == IDENTIFIERS_TITLE else None
            if hit:
                ids.append(IdentifierFact(m.seq, hit.group(1), hit.group(3), hit.group(2) == "user"))
            if section == PLAN_TITLE:
                steps.append(line)
        plan = tuple(steps) or plan
    fixed = [
        (r.seq, call_subject(call[1]).lower()) for r, call, failed in tool_results(surface) if not failed
    ]
    errors = [
        e for e in errors if not any(seq > e.seq and subject == e.subject.lower() for seq, subject in fixed)
    ]
    return DigestFacts(tuple(files), tuple(commands), tuple(errors), tuple(said), plan, tuple(ids))


def clip(text: str) -> str:
    """``text`` (one line), or its first `CLIP_TO` characters and "…" when over `CLIP_OVER`."""
    line = " ".join(text.split())
    return line if len(line) <= CLIP_OVER else line[:CLIP_TO] + "…"


def _more(n: int, what: str) -> list[str]:
    return [f"- … {n} earlier {what} not listed"] if n else []


def render(header: str, facts: DigestFacts) -> str:
    """The digest text: ``header``, then one ``##`` section per non-empty kind of fact."""
    d_files, d_commands, d_errors, d_said, d_plan, d_ids = facts.dropped
    out = [header.strip()]
    if facts.files or d_files:
        out += ["", FILES_TITLE, *_more(d_files, "file(s)")]
        out += [f"- {f.verb}: {normalize_path(f.path)}" for f in facts.files]
    if facts.commands or d_commands:
        out += ["", COMMANDS_TITLE, *_more(d_commands, "command(s)")]
        out += [f"- [{c.status}] {clip(c.command)}" for c in facts.commands]
    if facts.errors or d_errors:
        out += ["", ERRORS_TITLE, *_more(d_errors, "error(s)")]
        out += [
            f"- {e.tool}: {e.subject}" + (f" — {e.detail}" if e.detail and e.detail != e.subject else "")
            for e in facts.errors
        ]
    if facts.constraints or d_said:
        out += ["", SAID_TITLE, *_more(d_said, "instruction(s)")]
        out += [f"- {c.text}" for c in facts.constraints]
    if facts.plan or d_plan:
        out += ["", PLAN_TITLE, *facts.plan]
        out += [f"- … {d_plan} more item(s) not listed"] if d_plan else []
    if facts.identifiers or d_ids:
        out += ["", IDENTIFIERS_TITLE, *_more(d_ids, "identifier(s)")]
        out += [f"- {i.kind} ({'user' if i.by_user else 'tool'}): {i.value}" for i in facts.identifiers]
    return "\n".join(out)


def budget(surface: Sequence[Folded]) -> int:
    """The digest's character budget: a quarter of the folded messages' characters (text and
    call arguments), between `MIN_CHARS` and `MAX_CHARS`."""
    size = 0
    for m in surface:
        if m.folded:
            size += len(message_text(m.message))
            for call in m.message.get("tool_calls") or ():
                size += len(str((call.get("function") or {}).get("arguments") or ""))
    return min(MAX_CHARS, max(MIN_CHARS, size // 4))


def fit(header: str, facts: DigestFacts, max_chars: int) -> str:
    """`render`, dropping entries until the text is at most ``max_chars``: commands first, then
    identifiers, files, plan items, errors and instructions, the oldest of each first (counted as
    not listed)."""
    text = render(header, facts)
    while len(text) > max_chars and not facts.empty:
        facts = _drop_one(facts)
        text = render(header, facts)
    return text


def _drop_one(f: DigestFacts) -> DigestFacts:
    d = list(f.dropped)
    if f.commands:
        d[1] += 1
        return replace(f, commands=f.commands[1:], dropped=tuple(d))
    if f.identifiers:
        d[5] += 1
        return replace(f, identifiers=f.identifiers[1:], dropped=tuple(d))
    if f.files:
        d[0] += 1
        return replace(f, files=f.files[1:], dropped=tuple(d))
    if f.plan:
        d[4] += 1
        return replace(f, plan=f.plan[:-1], dropped=tuple(d))
    if f.errors:
        d[2] += 1
        return replace(f, errors=f.errors[1:], dropped=tuple(d))
    d[3] += 1
    return replace(f, constraints=f.constraints[1:], dropped=tuple(d))


def sections(facts: DigestFacts, max_chars: int = MAX_CHARS) -> str:
    """The facts' ``##`` sections alone, within ``max_chars`` (as `fit`): what the summariser is
    given to keep; ``""`` for none."""
    return "" if facts.empty else fit("", facts, max_chars).strip()


def missing(text: str, facts: DigestFacts) -> DigestFacts:
    """The facts ``text`` does not name (compared as tier 0 does: `survival.present`; a file by
    its path or ``parent/basename``)."""
    from foldlog.compaction.survival import normalize, present

    hay = normalize(text)
    return DigestFacts(
        tuple(f for f in facts.files if not any(present(a, hay) for a in path_answers(f.path))),
        tuple(c for c in facts.commands if not present(clip(c.command), hay)),
        tuple(e for e in facts.errors if not present(e.subject, hay)),
        tuple(c for c in facts.constraints if not present(c.text, hay)),
        tuple(line for line in facts.plan if not present(line, hay)),
        tuple(i for i in facts.identifiers if not present(i.value, hay)),
    )


#: the header of what a model summary left out and the digest appends
LEFT_OUT = "Facts of the folded messages the summary did not name (kept mechanically):"


def complete(summary: str, facts: DigestFacts, max_chars: int) -> str:
    """``summary`` with the facts it does not name appended under `LEFT_OUT` (within
    ``max_chars``, as `fit`); unchanged when it names them all."""
    left = missing(summary, facts)
    if left.empty:
        return summary
    return f"{summary.rstrip()}\n\n{fit(LEFT_OUT, left, max_chars)}"


def mechanical_digest(surface: Sequence[Folded], folded: int, where: str) -> str:
    """The mechanical fold's text: a header saying what was folded and where it is kept, then the
    folded part's facts (`digest_facts`) within its `budget`."""
    header = (
        f"{folded} earlier message(s) were folded here to free context, mechanically (no model "
        f"summary; the messages are kept in {where}). What they did, extracted from them:"
    )
    facts = digest_facts(surface)
    if facts.empty:
        header += "\n(no files, commands, errors, instructions or plan found in them)"
    return fit(header, facts, budget(surface))


__all__ = [
    "CLIP_OVER",
    "CLIP_TO",
    "COMMANDS_CAP",
    "CONSTRAINTS_CAP",
    "ERRORS_CAP",
    "FILES_CAP",
    "IDENTIFIERS_CAP",
    "LEFT_OUT",
    "MAX_CHARS",
    "MIN_CHARS",
    "PLAN_ITEMS_CAP",
    "DigestFacts",
    "budget",
    "carried",
    "clip",
    "complete",
    "digest_facts",
    "fit",
    "mechanical_digest",
    "missing",
    "render",
    "sections",
]
