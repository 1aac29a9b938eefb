"""`Session.from_bytes` on arbitrary bytes: only FoldlogError subclasses may escape; a log that
loads derives its messages, builds its wire JSON, and reloads from its own bytes unchanged."""

from __future__ import annotations

import json
import logging

from foldlog import Session
from foldlog.errors import FoldlogError

logging.disable(logging.WARNING)  # torn tails and unfinished compactions are logged, by design


def check(data: bytes) -> None:
    try:
        s = Session.from_bytes(data)
    except FoldlogError:
        return
    messages = s.derive_messages()
    wire = json.loads(s.wire_json())
    assert isinstance(wire, list), "wire_json is not a JSON array"
    assert len(s.wire_messages()) == len(wire), "wire_messages and wire_json disagree"
    again = Session.from_bytes(s._core.to_bytes())
    assert again.derive_messages() == messages, "the loaded log reloads to other messages"


if __name__ == "__main__":
    from _run import fuzz

    fuzz(check)
