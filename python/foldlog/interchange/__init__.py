"""Transcript interchange: foreign agent transcripts in, sessions out in other tools' formats.

``convert(format, path)`` returns :class:`Conversation` objects (one per transcript in the
file); ``write_conversation`` records one through a :class:`foldlog.Session`;
``export(session, fmt)`` writes a session as OpenAI messages, ATIF, Claude Code or Codex
(`foldlog.interchange.exports`).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from foldlog._lazy import lazy_attributes
from foldlog.errors import ConfigError
from foldlog.interchange.events import Conversation, ImportCounts, ImportedEvent, TranscriptError

if TYPE_CHECKING:
    from foldlog.interchange.exports import EXPORT_FORMATS, Exported, export
    from foldlog.interchange.writer import write_conversation

# CLI name -> module with ``convert(path) -> list[Conversation]``
FORMATS: dict[str, str] = {
    "claude-code": "foldlog.interchange.importers.claude_code",
    "codex": "foldlog.interchange.importers.codex",
    "openai": "foldlog.interchange.importers.openai_messages",
    "dsh": "foldlog.interchange.importers.dsh",
    "openhands": "foldlog.interchange.importers.openhands",
    "swe-agent": "foldlog.interchange.importers.swe_agent",
    "gemini": "foldlog.interchange.importers.gemini",
    "aider": "foldlog.interchange.importers.aider",
}


#: what ``branches=`` takes: the thread the session ended on, or every branch as a fork child
BRANCHES = ("current", "all")


def convert(format: str, path: str | Path, *, branches: str = "current") -> list[Conversation]:
    """Convert the transcript(s) in ``path`` from ``format`` (a key of :data:`FORMATS`).

    A format whose sessions are trees (``claude-code``) gives each conversation its sub-agents
    as ``children``; its abandoned branches are named in ``left_out`` (``branches="current"``)
    or become fork children too (``branches="all"``). Formats without branches ignore it."""
    module = FORMATS.get(format)
    if module is None:
        raise ConfigError(f"unknown transcript format {format!r} (known: {', '.join(FORMATS)})")
    if branches not in BRANCHES:
        raise ConfigError(f"branches={branches!r}: expected one of {', '.join(BRANCHES)}")
    converter = importlib.import_module(module)
    result: list[Conversation]
    if getattr(converter, "HAS_BRANCHES", False):
        result = converter.convert(path, branches=branches)
    else:
        result = converter.convert(path)
    return result


# the writer imports the session layer: loaded on first use
__getattr__, __dir__ = lazy_attributes(
    globals(),
    {
        "write_conversation": "foldlog.interchange.writer",
        "export": "foldlog.interchange.exports",
        "Exported": "foldlog.interchange.exports",
        "EXPORT_FORMATS": "foldlog.interchange.exports",
    },
)


__all__ = [
    "BRANCHES",
    "EXPORT_FORMATS",
    "FORMATS",
    "Conversation",
    "Exported",
    "ImportCounts",
    "ImportedEvent",
    "TranscriptError",
    "convert",
    "export",
    "write_conversation",
]
