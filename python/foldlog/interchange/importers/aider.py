"""aider ``.aider.chat.history.md`` → foldlog events, one conversation per aider session.

aider appends every session to one markdown file:

* ``# aider chat started at YYYY-MM-DD HH:MM:SS`` starts a session (text before the first one
  — the tail of an earlier session — is a session of its own, without a start time);
* ``#### …`` lines are what the user typed (consecutive ones are one message; ``/add``,
  ``/run`` … commands are kept as typed), and become ``user/message`` events;
* ``> …`` lines are aider's console output: file additions, confirmations, lint and test
  output, "Applied edit to …", commits, token and cost reports;
* everything else is the model's reply text (edit blocks included), one ``assistant/message``
  per stretch of it. Lines inside a fenced code block are reply text (``>>>>>>> REPLACE``) —
  but for ``####``: a reply cut short leaves its fence open, and the user's next prompt ends it.

The console output is what aider printed, not what the model was sent (output aider hands the
model, like lint errors, comes back as a ``####`` prompt), so it does not join the history
the model sees: each stretch of it is kept, verbatim, in the data of the message it follows
(``console``: a list of texts); what comes before a session's first message is the session's
``banner`` in the header's meta (its ``Models:`` line names the model). aider writes no tool
calls, no per-message usage and no per-message times: every event of a session takes the
session's start time (the file has no time zone: read as UTC). The website's example
transcripts (Jekyll front matter, ``<div class="chat-transcript">``) read the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder, TranscriptError
from foldlog.interchange.source import iso_ms, read_text

FORMAT = "aider"

_STARTED = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_MODEL = re.compile(r"^(?:Models?|Model): (\S+)")


@dataclass(slots=True)
class _Session:
    line: int
    started: str | None
    blocks: list[tuple[str, int, list[str]]] = field(default_factory=list)  # (kind, line, lines)

    def add(self, kind: str, line: int, text: str) -> None:
        if self.blocks and self.blocks[-1][0] == kind:
            self.blocks[-1][2].append(text)
        else:
            self.blocks.append((kind, line, [text]))


def _unbreak(text: str) -> str:
    """A line without the two spaces aider ends ``####`` and ``>`` lines with (a markdown break)."""
    return text[:-2] if text.endswith("  ") else text


def _transcript_lines(text: str) -> list[tuple[int, str]]:
    """The file's lines (numbered from 1) that hold the transcript: a website example's front
    matter and the page around its ``chat-transcript`` blocks are left out."""
    lines = text.splitlines()
    numbered = list(enumerate(lines, start=1))
    if not (text.startswith("---\n") and '<div class="chat-transcript"' in text):
        return numbered  # not a website page: a history file (which may well mention the div)
    out: list[tuple[int, str]] = []
    inside = False
    for number, line in numbered:
        if line.lstrip().startswith('<div class="chat-transcript"'):
            inside = True
        elif inside and line.strip() == "</div>":
            inside = False
        elif inside:
            out.append((number, line))
    return out


def sessions(text: str) -> list[_Session]:
    """The sessions of a history file, each as its blocks in order."""
    found: list[_Session] = []
    current: _Session | None = None
    fenced = False
    for number, line in _transcript_lines(text):
        started = _STARTED.match(line)
        if started:
            current = _Session(number, started.group(1))
            found.append(current)
            fenced = False
            continue
        if current is None:
            if not line.strip() or line.startswith("-*- mode:"):
                continue  # the editor mode line aider writes at the top
            current = _Session(number, None)
            found.append(current)
        if line.startswith("####"):  # even in a fence: a reply cut short leaves it open
            fenced = False
            current.add("user", number, _unbreak(line[5:] if line.startswith("#### ") else line[4:]))
        elif fenced or not line.startswith(">"):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            current.add("assistant", number, line)
        else:
            current.add("console", number, _unbreak(line[2:] if line.startswith("> ") else line[1:]))
    return found


def _convert_session(session: _Session, path: Path, index: int) -> Conversation:
    b = EventBuilder()
    b.time = iso_ms(session.started.replace(" ", "T")) if session.started else None
    meta: dict[str, Any] = {"format": FORMAT, "source": path.name, "session": index}
    if session.started:
        meta["startedAt"] = session.started
    model = next(
        (
            m.group(1)
            for kind, _, lines in session.blocks
            if kind == "console"
            for m in map(_MODEL.match, lines)
            if m
        ),
        None,
    )
    if model:
        meta["model"] = model
    banner: list[str] = []
    last: int | None = None  # seq of the message console output is kept with
    for kind, line, lines in session.blocks:
        text = "\n".join(lines).strip("\n")
        if not text.strip():
            continue
        b.line = line
        if kind == "console":
            if last is None:
                banner.append(text)
            else:
                b.events[last].data.setdefault("console", []).append(text)
        elif kind == "user":
            last = b.user(text)
        else:
            last = b.assistant(text, extra={"model": model} if model else None)
    if banner:
        meta["banner"] = "\n".join(banner)
    name = path.stem.lstrip(".")
    if session.started:  # sessions can start in the same second: the index keeps ids apart
        name += "-" + session.started.replace("-", "").replace(":", "").replace(" ", "-")
    return b.conversation(id=f"{name}-{index}", meta=meta)


def convert(path: str | Path) -> list[Conversation]:
    p = Path(path)
    text = read_text(p)
    found = sessions(text)
    if not found:
        raise TranscriptError("no aider session found (no '#### ' prompt or chat start line)", path=str(p))
    return [_convert_session(s, p, i) for i, s in enumerate(found)]
