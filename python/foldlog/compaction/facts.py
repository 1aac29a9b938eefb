"""Facts of the folded part of a session: the one extraction both the probes and the mechanical digest use.

Pure functions over the session's derived messages, each marked folded or not by the plan a fold
follows (`Compactor.plan`), by the documented rules of docs/compaction-benchmark.md ("Probes"):
files touched and their last action (tool-call arguments, patch headers, the obvious operands of a
few shell commands), shell commands run and how they ended, failing calls not fixed later, the
user's instructing sentences verbatim, identifiers, and the latest plan / todo state.
:mod:`foldlog.compaction.probes` asks questions about these facts; :mod:`foldlog.compaction.digest`
writes them into a mechanical fold's digest, so what the benchmark probes is what the digest keeps.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog.compaction.call_paths import (
    PATH_KEYS,
    SHELL_KEYS,
    TOOL_VERBS,
    artifact_calls,
    normalize_path,
    path_answers,
    shell_files,
    shell_text,
)
from foldlog.log.text import message_text

if TYPE_CHECKING:
    from foldlog.compaction.compactor import CompactionPreview
    from foldlog.log.session import Session


@dataclass(frozen=True, slots=True)
class Folded:
    """A message of the surface before the fold: its index, its seq, whether the fold folds it,
    and whether it is a digest (an earlier fold's summary: not evidence, it is already a fold)."""

    index: int
    seq: int
    message: Mapping[str, Any]
    folded: bool
    digest: bool


# --- reading the surface ----------------------------------------------------------------------


def surface_before(session: Session, preview: CompactionPreview) -> list[Folded]:
    """The surface the plan was made on, each message marked folded or not (nothing is folded
    when the plan skips)."""
    return mark(session.derive_messages(), preview)


def mark(messages: Sequence[Mapping[str, Any]], preview: CompactionPreview) -> list[Folded]:
    """``messages`` (the surface ``preview`` was planned on) marked folded or not, and digest or not."""
    from foldlog import _core

    flags = preview.history.columns()[2]
    fold = set(preview.plan.fold) if preview.should_fold else set()
    return [
        Folded(i, preview.seqs[i], messages[i], i in fold, bool(flags[i] & _core.PLAN_DIGEST))
        for i in range(len(messages))
    ]


def calls(message: Mapping[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """``(call id, tool name, arguments)`` of an assistant message's calls; the arguments
    decoded from JSON when they are JSON, else the raw text (a custom tool's input)."""
    for call in message.get("tool_calls") or ():
        fn = call.get("function") or {}
        raw = fn.get("arguments")
        args: Any = raw
        if isinstance(raw, str):
            try:
                args = json.loads(raw)
            except ValueError:
                args = raw
        yield str(call.get("id") or ""), str(fn.get("name") or ""), args


# --- artifacts --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FileFact:
    """A file the folded calls touched: its latest folded call's seq, what it did (``read``,
    ``edited``, ``created``, ``written``, ``deleted`` or ``touched``), the tool, the path as written."""

    seq: int
    verb: str
    tool: str
    path: str


def files_touched(surface: Sequence[Folded]) -> list[FileFact]:
    """One fact per distinct file (compared normalised, any case) the folded calls touched, its
    latest folded call the evidence, in evidence order."""
    latest: dict[str, FileFact] = {}
    for m in surface:
        if not m.folded:
            continue
        for _id, name, args in calls(m.message):
            for verb, path in artifact_calls(name, args):
                latest[normalize_path(path).lower()] = FileFact(m.seq, verb, name, path)
    return sorted(latest.values(), key=lambda f: f.seq)


# --- errors -----------------------------------------------------------------------------------

_EXIT = re.compile(r"(?:exit code|exited with code|exit status)[:=\s]+(-?\d+)", re.I)
_ERROR_PREFIXES = ("error:", "blocked:", "<tool_use_error>", "traceback (most recent call last)")


def is_error_result(message: Mapping[str, Any]) -> bool:
    """A tool result that failed: flagged ``is_error``, opening with an error prefix
    (``error:``, ``blocked:``, ``<tool_use_error>``, a Python traceback), or reporting a non-zero
    exit code in its first 200 characters."""
    if message.get("is_error"):
        return True
    head = message_text(message).lstrip()[:200]
    if head.lower().startswith(_ERROR_PREFIXES):
        return True
    code = _EXIT.search(head)
    return code is not None and code.group(1) != "0"


def call_subject(args: Any) -> str:
    """What a call ran: its shell command (whitespace collapsed), else its file path (as
    written), else ``""``."""
    if isinstance(args, Mapping):
        for key in SHELL_KEYS:
            text = shell_text(args.get(key))
            if text:
                return " ".join(text.split())
        for key in PATH_KEYS:
            if isinstance(args.get(key), str):
                return normalize_path(args[key])
    return ""


def call_key(name: str, args: Any) -> tuple[str, str]:
    """What makes two calls "the same run": the tool and its shell command, else the tool and
    its file path (any case), else the tool alone."""
    return name, call_subject(args).lower()


def error_line(message: Mapping[str, Any]) -> str:
    """A result's first line, ``<tool_use_error>`` tags removed, at most 120 characters (also
    what a masked failed result's stub keeps: `masking`)."""
    text = re.sub(r"</?tool_use_error>", "", message_text(message).strip()).strip()
    return text.splitlines()[0][:120] if text else ""


def _word_prefix(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a space, so the cut ends on a whole word
    and is found in the full text by the survival rule's whole-token match; a text with no space
    there is cut at ``limit``."""
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0].rstrip()
    return cut if cut and len(cut) <= limit else text[:limit]


def error_answer(name: str, args: Any, message: Mapping[str, Any]) -> str:
    """The failing command (longer than 200 characters: its first 120 at most, cut at a space),
    the file, or else the error's first line (at most 120 characters)."""
    what = call_subject(args)
    if what:
        return what if len(what) <= 200 else _word_prefix(what, 120)
    return error_line(message) or name[:120]


@dataclass(frozen=True, slots=True)
class ErrorFact:
    """A folded failing call no later call of the session ran successfully: its latest failure's
    seq, the tool, what failed (`error_answer`: command, file or first line) and the error's
    first line."""

    seq: int
    tool: str
    subject: str
    detail: str


def tool_results(surface: Sequence[Folded]) -> list[tuple[Folded, tuple[str, Any], bool]]:
    """Each tool result of the surface with its call ``(tool name, arguments)`` (``(name, None)``
    when the call is not on the surface) and whether it failed (`is_error_result`)."""
    callers: dict[str, tuple[str, Any]] = {}
    results: list[tuple[Folded, tuple[str, Any], bool]] = []
    for m in surface:
        for cid, name, args in calls(m.message):
            callers[cid] = (name, args)
        if m.message.get("role") == "tool":
            cid = str(m.message.get("tool_call_id") or "")
            call = callers.get(cid, (str(m.message.get("name") or "tool"), None))
            results.append((m, call, is_error_result(m.message)))
    return results


def unresolved_errors(surface: Sequence[Folded]) -> list[ErrorFact]:
    """One fact per call key (`call_key`) whose latest folded run failed and that no later call
    of the session (folded or on the surface) ran successfully, in evidence order."""
    results = tool_results(surface)
    keys = [call_key(*call) for _m, call, _f in results]
    found: dict[tuple[str, str], ErrorFact] = {}
    for k, (m, (name, args), failed) in enumerate(results):
        if not (m.folded and failed):
            continue
        key = keys[k]
        if any(keys[j] == key and not results[j][2] for j in range(k + 1, len(results))):
            continue  # fixed later
        found[key] = ErrorFact(m.seq, name, error_answer(name, args, m.message), error_line(m.message))
    return sorted(found.values(), key=lambda f: f.seq)


# --- the user's constraints -------------------------------------------------------------------

CONSTRAINT_WORDS = re.compile(
    r"\b(must|mustn't|never|always|don't|do not|doesn't|only|should|shouldn't|avoid|make sure|ensure|"
    r"required?|need to|needs to|no longer|instead of|prefer|without)\b",
    re.I,
)
_TAGGED = re.compile(r"<([A-Za-z][\w-]*)[^>]*>.*?</\1>", re.S)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_REDACTED = re.compile(r"\[REDACTED[^\]]*\]")


def user_text(m: Folded) -> str | None:
    """A folded user turn's own words: no digests, tool outputs or tagged blocks the client
    inserted (``<system-reminder>…</system-reminder>``, ``<command-name>…``), nor redaction
    markers; ``None`` when it is not a user turn."""
    if m.message.get("role") != "user" or m.digest:
        return None
    return _REDACTED.sub(" ", _TAGGED.sub(" ", message_text(m.message)))


@dataclass(frozen=True, slots=True)
class ConstraintFact:
    """An instructing sentence of a folded user turn, verbatim (whitespace collapsed), and the
    seq of the latest folded turn that says it."""

    seq: int
    text: str


def constraints(surface: Sequence[Folded]) -> list[ConstraintFact]:
    """Each distinct folded user-turn sentence (3 words to 300 characters) with an instruction
    word (`CONSTRAINT_WORDS`), in evidence order."""
    seen: dict[str, ConstraintFact] = {}
    for m in surface:
        text = user_text(m) if m.folded else None
        if not text:
            continue
        for sentence in _SENTENCE.split(text):
            s = " ".join(sentence.split()).strip("-*• ")
            if len(s.split()) < 3 or len(s) > 300 or not CONSTRAINT_WORDS.search(s):
                continue
            seen.pop(s.lower(), None)  # the latest evidence
            seen[s.lower()] = ConstraintFact(m.seq, s)
    return sorted(seen.values(), key=lambda f: f.seq)


# --- identifiers ------------------------------------------------------------------------------

_IDENTIFIERS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("UUID", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")),
    ("URL", re.compile(r"https?://[^\s<>\"'`)\]]+[^\s<>\"'`)\].,;:!?]")),
    ("hex id", re.compile(r"(?<![\w./-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])")),
    ("issue number", re.compile(r"(?<![\w&])#\d{1,6}\b")),
    ("version", re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?(?![\w.])")),
    ("ticket key", re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,6}\b")),
    ("constant name", re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]\b")),
)


def identifiers(text: str) -> list[tuple[str, str]]:
    """``(kind, value)`` in order of appearance; a span is taken by the first kind that matches
    it (a UUID is not also a hex id, a URL's parts are not ids)."""
    text = _REDACTED.sub(" ", text)
    taken: list[tuple[int, int, str, str]] = []
    for kind, pattern in _IDENTIFIERS:
        for m in pattern.finditer(text):
            if not any(a < m.end() and m.start() < b for a, b, _k, _v in taken):
                taken.append((m.start(), m.end(), kind, m.group(0)))
    return [(k, v) for _a, _b, k, v in sorted(taken)]


@dataclass(frozen=True, slots=True)
class IdentifierFact:
    """An identifier (`identifiers`) of a folded user turn or tool result: the latest such
    message's seq, the kind, the value and whether the user (else a tool result) said it."""

    seq: int
    kind: str
    value: str
    by_user: bool


def identifiers_found(surface: Sequence[Folded]) -> list[IdentifierFact]:
    """Each distinct identifier (any case) of the folded user turns and tool results, in evidence order."""
    found: dict[str, IdentifierFact] = {}
    for m in surface:
        if not m.folded:
            continue
        role = m.message.get("role")
        text = user_text(m) if role == "user" else message_text(m.message) if role == "tool" else None
        for kind, value in identifiers(text or ""):
            found.pop(value.lower(), None)  # the latest evidence, found again in order
            found[value.lower()] = IdentifierFact(m.seq, kind, value, role == "user")
    return sorted(found.values(), key=lambda f: f.seq)


# --- decisions (free text, for a judge) -------------------------------------------------------

PLAN_TOOLS = frozenset({"todowrite", "todo_write", "update_plan", "todo"})


def plan_text(args: Any) -> str | None:
    """A plan / todo call's state as lines ``[status] step``; ``None`` when it holds none."""
    if not isinstance(args, Mapping):
        return None
    items = args.get("todos") or args.get("plan") or args.get("items")
    if not isinstance(items, list):
        return None
    lines = []
    for item in items:
        if isinstance(item, Mapping):
            step = item.get("content") or item.get("step") or item.get("title") or ""
            lines.append(f"[{item.get('status') or '?'}] {step}")
        elif isinstance(item, str):
            lines.append(item)
    return "\n".join(lines) or None


@dataclass(frozen=True, slots=True)
class PlanFact:
    """The latest plan / todo call of the surface: its seq, its state as lines ``[status] step``,
    and whether the fold folds it."""

    seq: int
    text: str
    folded: bool


def last_plan(surface: Sequence[Folded]) -> PlanFact | None:
    """The latest `PLAN_TOOLS` call of the whole surface that holds a list (``None``: none)."""
    last: PlanFact | None = None
    for m in surface:
        for _id, name, args in calls(m.message):
            text = plan_text(args) if name.lower() in PLAN_TOOLS else None
            if text is not None:
                last = PlanFact(m.seq, text, m.folded)
    return last


# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommandFact:
    """A shell command a folded call ran: the latest folded run's seq, the tool, the command
    (whitespace collapsed) and how it ended: ``exit N`` (reported), ``failed`` (an error without
    a code), ``ok`` (no failure reported) or ``no result``."""

    seq: int
    tool: str
    command: str
    status: str


def shell_command(args: Any) -> str | None:
    """The shell command a call ran (``command`` / ``cmd``, whitespace collapsed); ``None`` for
    none, or for an editor's sub-command (``str_replace_editor``'s ``view``, ``create``, …)."""
    if not isinstance(args, Mapping):
        return None
    for key in SHELL_KEYS:
        text = shell_text(args.get(key))
        if text and text.strip().lower() not in TOOL_VERBS:
            return " ".join(text.split())
    return None


def result_status(message: Mapping[str, Any] | None) -> str:
    """``exit N`` when the result reports a code in its first 200 characters, else ``failed`` /
    ``ok`` (`is_error_result`); ``no result`` for ``None``."""
    if message is None:
        return "no result"
    code = _EXIT.search(message_text(message).lstrip()[:200])
    if code is not None:
        return f"exit {code.group(1)}"
    return "failed" if is_error_result(message) else "ok"


def commands_run(surface: Sequence[Folded]) -> list[CommandFact]:
    """One fact per distinct command (tool and command, any case) the folded calls ran, its
    latest folded run the evidence and status, in evidence order."""
    results = {str(r.message.get("tool_call_id") or ""): r.message for r, _call, _f in tool_results(surface)}
    latest: dict[tuple[str, str], CommandFact] = {}
    for m in surface:
        if not m.folded:
            continue
        for cid, name, args in calls(m.message):
            command = shell_command(args)
            if command is not None:
                key = (name, command.lower())
                latest.pop(key, None)
                latest[key] = CommandFact(m.seq, name, command, result_status(results.get(cid)))
    return list(latest.values())


__all__ = [
    "PATH_KEYS",
    "CommandFact",
    "ConstraintFact",
    "ErrorFact",
    "FileFact",
    "Folded",
    "IdentifierFact",
    "PlanFact",
    "artifact_calls",
    "call_key",
    "call_subject",
    "calls",
    "commands_run",
    "constraints",
    "error_answer",
    "error_line",
    "files_touched",
    "identifiers",
    "identifiers_found",
    "is_error_result",
    "last_plan",
    "mark",
    "normalize_path",
    "path_answers",
    "plan_text",
    "shell_command",
    "shell_files",
    "surface_before",
    "tool_results",
    "unresolved_errors",
    "user_text",
]
