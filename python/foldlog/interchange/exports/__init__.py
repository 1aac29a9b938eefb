"""Exports: a session written in another tool's format (``foldlog log export --to …``).

``export(session, fmt)`` returns an `Exported`: the document's text, the files that go beside
it (a Claude Code transcript's sub-agent files) and what the format could not carry
(``warnings``: each block it cannot hold names its message and block; ``strict=True`` makes
any warning an `ExportError` instead). One module per format, each writing the history
`export_walk.history` reads:

| ``fmt`` | module | what |
|---|---|---|
| ``openai`` | `export_openai` | the derived messages (``wire=True``: what a request would carry) |
| ``atif`` | `export_atif` | an ATIF-v1.7 trajectory, checked against the schema |
| ``claude-code`` | `export_claude_code` | a Claude Code session JSONL (+ ``subagents/agent-*.jsonl``) |
| ``codex`` | `export_codex` | a Codex CLI rollout JSONL |

Sub-agents: ``children`` are the sessions whose header names this one as their parent
(``kind: "subagent"`` with the ``callId`` they answer); `subagent_children` finds them in a
folder of session files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from foldlog.errors import ExportError

if TYPE_CHECKING:
    from foldlog.log.session import Session

EXPORT_FORMATS = ("openai", "atif", "claude-code", "codex")
#: the file suffix of each format's main document
SUFFIXES = {"openai": ".json", "atif": ".json", "claude-code": ".jsonl", "codex": ".jsonl"}


def suffix(fmt: str) -> str:
    """The suffix of ``fmt``'s main file (``.jsonl``); an unknown format raises `ExportError`."""
    if fmt not in SUFFIXES:
        raise ExportError(f"unknown export format {fmt!r} (known: {', '.join(EXPORT_FORMATS)})")
    return SUFFIXES[fmt]


@dataclass(slots=True)
class Exported:
    """An exported session: the main document, files beside it, and what was not carried."""

    format: str
    text: str
    #: more files, by path relative to the main file's stem (``subagents/agent-ID.jsonl`` goes
    #: in ``<stem>/subagents/`` beside ``<stem>.jsonl``, as Claude Code lays them out)
    files: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def write(self, path: str | os.PathLike[str]) -> list[Path]:
        """Write the document to ``path`` and the other files beside it; returns every path."""
        main = Path(path)
        main.parent.mkdir(parents=True, exist_ok=True)
        main.write_text(self.text, encoding="utf-8")
        written = [main]
        for rel, text in self.files.items():
            target = main.parent / main.stem / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written.append(target)
        return written


def export(
    session: Session,
    fmt: str,
    *,
    children: Sequence[Session] = (),
    wire: bool = False,
    strict: bool = False,
) -> Exported:
    """``session`` written as ``fmt`` (one of `EXPORT_FORMATS`); ``children``: its sub-agents'
    sessions (Claude Code and ATIF carry them; the others name them in the warnings).
    ``strict``: anything the format cannot carry (every warning) raises `ExportError` naming
    it all, instead of being written in its nearest form."""
    from foldlog.log.media import inline_session

    # the media a log references written as data again: an export stands on its own
    result = _export(inline_session(session), fmt, [inline_session(c) for c in children], wire)
    if strict and result.warnings:
        shown = "; ".join(result.warnings[:10])
        more = f"; … {len(result.warnings) - 10} more" if len(result.warnings) > 10 else ""
        raise ExportError(
            f"{fmt} cannot carry all of session {session.id} ({len(result.warnings)} problem(s), "
            f"strict): {shown}{more}"
        )
    return result


def _export(session: Session, fmt: str, children: Sequence[Session], wire: bool) -> Exported:
    if fmt == "openai":
        from foldlog.interchange.exports.openai import export as to_openai

        text = to_openai(session, wire=wire)
        return Exported(fmt, text, warnings=_children_left_out(children, fmt))
    if fmt == "atif":
        from foldlog.interchange.exports.atif import export as to_atif

        doc, warnings = to_atif(session, children)
        return Exported(fmt, json.dumps(doc, indent=2, ensure_ascii=False) + "\n", warnings=warnings)
    if fmt == "claude-code":
        from foldlog.interchange.exports.claude_code import export as to_claude

        text, files, warnings = to_claude(session, children)
        return Exported(fmt, text, files, warnings)
    if fmt == "codex":
        from foldlog.interchange.exports.codex import export as to_codex

        text, warnings = to_codex(session)
        return Exported(fmt, text, warnings=[*warnings, *_children_left_out(children, fmt)])
    raise ExportError(f"unknown export format {fmt!r} (known: {', '.join(EXPORT_FORMATS)})")


def _children_left_out(children: Sequence[Session], fmt: str) -> list[str]:
    if not children:
        return []
    ids = ", ".join(c.id for c in children)
    return [f"{len(children)} sub-agent session(s) not carried ({fmt} has no form for them): {ids}"]


def subagent_children(session_id: str, folder: str | os.PathLike[str]) -> list[Session]:
    """The sub-agent sessions of ``session_id`` among the session files in ``folder`` (their
    header's parent is ``{"kind": "subagent", "id": session_id, …}``), oldest first."""
    from foldlog.log.session import Session
    from foldlog.stores.file import FileStore

    rows = [
        info
        for info in FileStore(folder).list_sessions()
        if info.parent == session_id and info.parent_kind == "subagent" and info.path
    ]
    return [Session.load(info.path) for info in sorted(rows, key=lambda i: i.created) if info.path]
