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
``decision`` (the latest todo / plan state, free text, not scored by tier 0).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from foldlog.errors import ConfigError
from foldlog.log.text import message_text

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
    from foldlog import _core

    messages = session.derive_messages()
    flags = preview.history.columns()[2]
    fold = set(preview.plan.fold) if preview.should_fold else set()
    return [
        Folded(i, preview.seqs[i], messages[i], i in fold, bool(flags[i] & _core.PLAN_DIGEST))
        for i in range(len(messages))
    ]


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

#: argument names that hold a file path across Claude Code, Codex, OpenHands, SWE-agent and
#: foldlog's own tools
PATH_KEYS = ("file_path", "path", "filename", "notebook_path", "filepath", "file", "target_file")
#: tools whose ``path`` is a search scope, not a file touched
SEARCH_TOOLS = frozenset({"glob", "grep", "ls", "list_dir", "list_files", "search", "find", "search_files"})
SHELL_KEYS = ("command", "cmd")
_PATCH_HEADERS = (
    (re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+?)\s*$", re.M), None),
    (re.compile(r"^\*\*\* Move to: (.+?)\s*$", re.M), "created"),
    (re.compile(r"^\+\+\+ b/(\S+)", re.M), "edited"),
    (re.compile(r"^--- a/(\S+)", re.M), "edited"),
    (re.compile(r"^diff --git a/(\S+) b/(\S+)", re.M), "edited"),
)
_PATCH_VERBS = {"Add": "created", "Update": "edited", "Delete": "deleted"}
_TOOL_VERBS = {
    "read": "read",
    "read_file": "read",
    "view": "read",
    "write": "created",
    "write_file": "created",
    "create": "created",
    "edit": "edited",
    "edit_file": "edited",
    "multiedit": "edited",
    "notebookedit": "edited",
    "str_replace": "edited",
    "insert": "edited",
    "undo_edit": "edited",
}
#: shell programs whose plain operands are files, and what they do to them
_SHELL_VERBS = {
    "cat": "read",
    "head": "read",
    "tail": "read",
    "less": "read",
    "more": "read",
    "nl": "read",
    "wc": "read",
    "stat": "read",
    "touch": "created",
    "rm": "deleted",
    "sed": "read",
}
_SHELL_SPLIT = frozenset({"&&", "||", ";", "|", "&"})
#: a shell operand that looks like a file (a space only comes from quoting, so it is meant)
_FILE_LIKE = re.compile(r"^[\w@~+./ -]*\w\.[A-Za-z0-9]{1,10}$|^[\w@~+. -]*/[\w@~+./ -]*\w$")


def normalize_path(path: str) -> str:
    """A path as probes compare it: separators ``/``, no leading ``./``, no trailing ``/``."""
    p = path.strip().replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") if len(p) > 1 else p


def path_answers(path: str) -> tuple[str, ...]:
    """The accepted answers for a file: its path as written and, when it has a parent
    directory, ``parent/basename`` (the rule of docs/compaction-benchmark.md)."""
    p = normalize_path(path)
    parts = [x for x in p.split("/") if x]
    short = "/".join(parts[-2:])
    return (p,) if short == p or len(parts) < 2 else (p, short)


def _plausible_path(p: str) -> bool:
    p = normalize_path(p)
    return (
        0 < len(p) <= 300
        and "\n" not in p
        and p not in (".", "..", "/", "~", "/dev/null")
        and not p.startswith(("[REDACTED", "http://", "https://"))
        and not any(c in p for c in "*?{}$<>|`\"'")
    )


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def shell_text(value: Any) -> str | None:
    """A shell command's text: a string, or an argv list (``["bash", "-lc", script]`` → the script)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if (
            len(value) >= 3
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
            and value[1] in ("-lc", "-c")
        ):
            return str(value[-1])
        return shlex.join(value)
    return None


def shell_files(command: str) -> list[tuple[str, str]]:
    """``(verb, path)`` for the obvious file operands of a shell command: the plain operands of
    ``cat head tail less more nl wc stat touch rm`` (``sed``: after its script), and the targets
    of ``>`` / ``>>``. A here-document's body is not read (it is data, not commands); anything
    shlex cannot split is left alone (no guessing)."""
    lines = command.split("\n")
    heredoc = next((k for k, line in enumerate(lines) if "<<" in line), None)
    if heredoc is not None:
        lines = lines[: heredoc + 1]
    try:
        tokens = shlex.split(" ; ".join(lines), posix=True)
    except ValueError:
        return []
    out: list[tuple[str, str]] = []
    argv: list[str] = []
    for k, tok in enumerate([*tokens, ";"]):
        if tok in (">", ">>") and k + 1 < len(tokens):
            out.append(("written", tokens[k + 1]))
        if tok in _SHELL_SPLIT or tok.endswith(";"):
            if tok.endswith(";") and tok != ";":
                argv.append(tok[:-1])  # "cat a.txt; rm b" splits as "a.txt;"
            out += _operands(argv)
            argv = []
        else:
            argv.append(tok)
    return [(verb, p) for verb, p in out if _plausible_path(p) and _FILE_LIKE.match(p)]


def _operands(argv: list[str]) -> list[tuple[str, str]]:
    while argv and "=" in argv[0] and not argv[0].startswith("-"):
        argv = argv[1:]  # VAR=value prefixes
    if not argv:
        return []
    program = argv[0].rsplit("/", 1)[-1]
    verb = _SHELL_VERBS.get(program)
    if verb is None:
        return []
    rest: list[str] = []
    skip = False
    for tok in argv[1:]:
        if skip:
            skip = False
        elif tok in (">", ">>", "<", "2>", "2>&1"):
            skip = tok != "2>&1"
        elif tok.startswith("-"):
            skip = program in ("head", "tail") and tok in ("-n", "-c")
        else:
            rest.append(tok)
    if program == "sed":
        rest = rest[1:]  # the script
    return [(verb, t) for t in rest]


def artifact_calls(name: str, args: Any) -> list[tuple[str, str]]:
    """``(verb, path)`` for every file one call touches, by the rules above."""
    out: list[tuple[str, str]] = []
    lname = name.lower()
    if isinstance(args, Mapping):
        if lname not in SEARCH_TOOLS:
            verb = _TOOL_VERBS.get(str(args.get("command") or "").lower()) or _TOOL_VERBS.get(
                lname, "touched"
            )
            for key in PATH_KEYS:
                value = args.get(key)
                for p in value if isinstance(value, list) else [value]:
                    if isinstance(p, str) and _plausible_path(p):
                        out.append((verb, p))
        for key in SHELL_KEYS:
            text = shell_text(args.get(key))
            if text is not None:
                out += shell_files(text)
    for text in _strings(args):
        out += patch_files(text)
    return out


def patch_files(text: str) -> list[tuple[str, str]]:
    """``(verb, path)`` from patch headers: ``*** Add/Update/Delete File: x``, ``*** Move to: x``,
    ``--- a/x`` / ``+++ b/x`` and ``diff --git a/x b/y``."""
    if "***" not in text and "--- a/" not in text and "+++ b/" not in text and "diff --git" not in text:
        return []
    out: list[tuple[str, str]] = []
    for pattern, verb in _PATCH_HEADERS:
        for m in pattern.finditer(text):
            if verb is None:
                out.append((_PATCH_VERBS[m.group(1)], m.group(2)))
            else:
                out += [(verb, g) for g in m.groups()]
    return [(v, p) for v, p in out if _plausible_path(p)]


def artifact_probes(surface: Sequence[Folded]) -> list[Probe]:
    """One probe per distinct file (compared normalised, any case) the folded calls touched,
    evidenced by the latest folded call that touched it; its question names the last action."""
    latest: dict[str, tuple[int, str, str, str]] = {}
    for m in surface:
        if not m.folded:
            continue
        for _id, name, args in calls(m.message):
            for verb, path in artifact_calls(name, args):
                latest[normalize_path(path).lower()] = (m.seq, verb, name, path)
    probes = [
        Probe(
            "artifact",
            f"Which file was {verb} with the {name} tool (event #{seq})? Give its path.",
            path_answers(path),
            seq,
        )
        for seq, verb, name, path in latest.values()
    ]
    return sorted(probes, key=lambda p: p.seq)


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


def _error_answer(name: str, args: Any, message: Mapping[str, Any]) -> str:
    """The failing command (longer than 200 characters: its first 120), the file, or else the
    error's first line (at most 120 characters)."""
    what = call_subject(args)
    if what:
        return what if len(what) <= 200 else what[:120]
    text = message_text(message).strip()
    text = re.sub(r"</?tool_use_error>", "", text).strip()
    first = text.splitlines()[0] if text else name
    return first[:120]


def error_probes(surface: Sequence[Folded]) -> list[Probe]:
    """A folded failing call whose command (or tool and file) no later call of the session ran
    successfully: one probe per distinct call key, the latest failure the evidence."""
    callers: dict[str, tuple[str, Any]] = {}
    results: list[tuple[Folded, tuple[str, Any], bool]] = []
    for m in surface:
        for cid, name, args in calls(m.message):
            callers[cid] = (name, args)
        if m.message.get("role") == "tool":
            cid = str(m.message.get("tool_call_id") or "")
            call = callers.get(cid, (str(m.message.get("name") or "tool"), None))
            results.append((m, call, is_error_result(m.message)))
    keys = [call_key(*call) for _m, call, _f in results]
    probes: dict[tuple[str, str], Probe] = {}
    for k, (m, (name, args), failed) in enumerate(results):
        if not (m.folded and failed):
            continue
        key = keys[k]
        if any(keys[j] == key and not results[j][2] for j in range(k + 1, len(results))):
            continue  # fixed later
        probes[key] = Probe(
            "error",
            f"Which {name} call failed (event #{m.seq}) and was not run successfully later? "
            "Give its command, file or error.",
            (_error_answer(name, args, m.message),),
            m.seq,
        )
    return sorted(probes.values(), key=lambda p: p.seq)


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


def constraint_probes(surface: Sequence[Folded]) -> list[Probe]:
    """Each distinct folded user-turn sentence (3 words to 300 characters) with an instruction
    word (`CONSTRAINT_WORDS`), verbatim (whitespace collapsed), its evidence the latest folded
    turn that says it."""
    seen: dict[str, Probe] = {}
    for m in surface:
        text = user_text(m) if m.folded else None
        if not text:
            continue
        for sentence in _SENTENCE.split(text):
            s = " ".join(sentence.split()).strip("-*• ")
            if len(s.split()) < 3 or len(s) > 300 or not CONSTRAINT_WORDS.search(s):
                continue
            seen.pop(s.lower(), None)  # the latest evidence
            seen[s.lower()] = Probe(
                "constraint", f"What did the user instruct (event #{m.seq})? Quote it.", (s,), m.seq
            )
    return sorted(seen.values(), key=lambda p: p.seq)


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


def identifier_probes(surface: Sequence[Folded]) -> list[Probe]:
    """Each distinct identifier (`identifiers`) of the folded user turns and tool results, its
    evidence the latest folded message that holds it."""
    found: dict[str, Probe] = {}
    for m in surface:
        if not m.folded:
            continue
        role = m.message.get("role")
        text = user_text(m) if role == "user" else message_text(m.message) if role == "tool" else None
        for kind, value in identifiers(text or ""):
            where = "the user" if role == "user" else "a tool result"
            found.pop(value.lower(), None)  # the latest evidence, found again in order
            found[value.lower()] = Probe(
                "identifier", f"Which {kind} did {where} mention (event #{m.seq})?", (value,), m.seq
            )
    return sorted(found.values(), key=lambda p: p.seq)


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


def decision_probes(surface: Sequence[Folded]) -> list[Probe]:
    """The latest plan / todo state of the surface (TodoWrite, update_plan), when the fold folds
    it (a later one on the surface supersedes it: no probe)."""
    last: tuple[Folded, str] | None = None
    for m in surface:
        for _id, name, args in calls(m.message):
            text = plan_text(args) if name.lower() in PLAN_TOOLS else None
            if text is not None:
                last = (m, text)
    if last is None or not last[0].folded:
        return []
    m, text = last
    return [Probe("decision", f"What was the plan / todo state (event #{m.seq})?", (text,), m.seq)]


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
