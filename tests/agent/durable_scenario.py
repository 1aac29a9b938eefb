"""The durable-run scenario (docs/durable-runs.md) shared by the resume tests and the child process
of the kill test: a 3-step turn with a side-effecting tool and a read-only one, on the scripted
provider, so that a run and its resume in another process make the same requests.

Step 1 reads the note (read-only) and appends ``one`` (the side effect: a line in the counter
file); step 2 appends ``two``; step 3 answers ``done``. The reply is chosen by how many replies
with calls the request already holds, so a resumed process (whose provider starts afresh) asks
the next step's question, not the first's.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foldlog import Agent, Options, Session, tool
from foldlog.providers.base import Request
from foldlog.providers.scripted import Scripted
from foldlog.tools.registry import Tool

ANSWER = "done"
LINES = ("one", "two")


def _calls(message: Mapping[str, Any]) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls"))


def next_reply(request: Request) -> dict[str, Any]:
    """The reply to ``request``: the step after those the history already holds."""
    done = sum(1 for m in request.messages if _calls(m))
    usage = {"prompt_tokens": 50, "completion_tokens": 5}
    if done == 0:
        calls = [
            {"id": "read-1", "name": "read_note", "arguments": "{}"},
            {"id": "append-1", "name": "append_line", "arguments": '{"text": "one"}'},
        ]
        return {"content": "", "tool_calls": calls, "usage": usage}
    if done == 1:
        calls = [{"id": "append-2", "name": "append_line", "arguments": '{"text": "two"}'}]
        return {"content": "", "tool_calls": calls, "usage": usage}
    return {"content": ANSWER, "usage": usage}


def tools(counter: Path) -> list[Tool]:
    @tool
    def append_line(text: str) -> str:
        """Append a line to the note (a side effect: never to be done twice)."""
        with counter.open("a", encoding="utf-8") as f:
            f.write(text + "\n")
            f.flush()
        return f"appended {text}"

    @tool(read_only=True)
    def read_note() -> str:
        """The note's lines."""
        return counter.read_text(encoding="utf-8") if counter.exists() else "(empty)"

    return [append_line, read_note]


def make_agent(session: Session, counter: Path, options: Options | None = None) -> Agent:
    provider = Scripted([next_reply] * 20)
    return Agent(provider, tools(counter), session, options or Options(release_when_idle=False))


def side_effects(counter: Path) -> list[str]:
    return counter.read_text(encoding="utf-8").splitlines() if counter.exists() else []
