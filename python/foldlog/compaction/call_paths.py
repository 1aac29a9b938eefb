"""Which files one tool call touches, and how: path arguments, patch headers and the obvious
operands of a few shell commands (docs/compaction-benchmark.md, "artifact"). Used through
:mod:`foldlog.compaction.facts` by both the probes and the mechanical digest.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

#: argument names that hold a file path (or a list of them) across Claude Code, Codex, OpenHands,
#: SWE-agent, Gemini CLI (``absolute_path``, ``paths``), OpenCode (``filePath``), Cursor and
#: foldlog's own tools
PATH_KEYS = (
    "file_path",
    "path",
    "filename",
    "notebook_path",
    "filepath",
    "filePath",
    "absolute_path",
    "file",
    "target_file",
    "paths",
)
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
TOOL_VERBS = {
    "read": "read",
    "read_file": "read",
    "view": "read",
    "write": "created",
    "write_file": "created",
    "create": "created",
    "create_file": "created",
    "delete_file": "deleted",
    "read_many_files": "read",
    "replace": "edited",
    "apply_patch": "edited",
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


def json_strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded JSON value (arguments, results), in document order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from json_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from json_strings(v)


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
            verb = TOOL_VERBS.get(str(args.get("command") or "").lower()) or TOOL_VERBS.get(lname, "touched")
            for key in PATH_KEYS:
                value = args.get(key)
                for p in value if isinstance(value, list) else [value]:
                    if isinstance(p, str) and _plausible_path(p):
                        out.append((verb, p))
        for key in SHELL_KEYS:
            text = shell_text(args.get(key))
            if text is not None:
                out += shell_files(text)
    for text in json_strings(args):
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
