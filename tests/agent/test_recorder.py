"""One writer of the turn/step/call/result grammar: the agent's events and the events the
importers build for the same conversation are the same (both go through
`foldlog.agent.recorder.Recorder`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foldlog import Agent, Session, thaw, tool
from foldlog.interchange import convert
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, reply

GRAMMAR = {"turn/start", "step/start", "user/message", "assistant/message", "tool/call", "tool/result"}
GRAMMAR |= {"step/end", "turn/end"}


@tool(read_only=True)
def look(path: str) -> str:
    """Read a file."""
    return f"contents of {path}"


def _grammar(events: Any) -> list[tuple[str, Any, Any, Any]]:
    out = []
    for ev in events:
        if ev["type"] not in GRAMMAR:
            continue
        data = thaw(ev["data"])
        data.pop("usage", None)  # the provider's report: an exported transcript has none
        out.append((ev["type"], data, thaw(ev.get("surfaceOp")), thaw(ev.get("sourceEventSeqs"))))
    return out


def test_an_imported_transcript_of_an_agent_run_is_written_as_the_agent_wrote_it(tmp_path: Path) -> None:
    session = Session()
    p = Scripted([reply("let me look", call("look", '{"path": "a.txt"}', "c1")), reply("it says hi")])
    assert Agent(p, [look], session).run_sync("what is in a.txt?") == "it says hi"

    exported = tmp_path / "run.json"
    exported.write_text(json.dumps([dict(m) for m in thaw(session.derive_messages())]))
    [conversation] = convert("openai", exported)
    imported = Session()
    from foldlog.interchange import write_conversation

    write_conversation(conversation, imported)

    ours, theirs = _grammar(session.events), _grammar(imported.events)
    assert [t for t, *_ in ours] == [t for t, *_ in theirs]
    # seqs differ (the agent's log also holds request/header events): compare without them
    assert [(t, d, op if isinstance(op, str) else None) for t, d, op, _ in ours] == [
        (t, d, op if isinstance(op, str) else None) for t, d, op, _ in theirs
    ]
