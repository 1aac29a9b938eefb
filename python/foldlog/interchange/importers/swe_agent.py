"""SWE-agent ``.traj`` → foldlog events.

``history`` is the model's message list in chat shape. Function-calling runs carry
``tool_calls`` (sometimes stored as a Python-literal string) and answer them with ``tool``
messages holding a ``tool_call_ids`` list; text-command runs put the command in the reply text
and the observation in the next ``user`` message, which we record inside the running turn.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldlog.interchange.events import Conversation, EventBuilder
from foldlog.interchange.importers.openai_messages import add_messages
from foldlog.interchange.source import expect, load_json

FORMAT = "swe-agent"


def convert(path: str | Path) -> list[Conversation]:
    doc = load_json(path)
    expect(isinstance(doc, dict), "a .traj file must hold a JSON object", path, None)
    history = doc.get("history")
    expect(isinstance(history, list), 'no "history" array (is this a SWE-agent .traj file?)', path, None)
    b = EventBuilder()
    add_messages(b, history, path, observations=True)
    meta: dict[str, Any] = {"format": FORMAT, "source": Path(path).name}
    info = doc.get("info")
    if isinstance(info, dict):
        for key in ("exit_status", "model_stats"):
            if key in info:
                meta[key] = info[key]
    reason = "completed"
    if isinstance(info, dict) and isinstance(info.get("exit_status"), str):
        status = info["exit_status"]
        reason = "completed" if status.startswith("submitted") or status == "" else "error"
    b.finish(reason)
    return [b.conversation(id=Path(path).stem, meta=meta)]
