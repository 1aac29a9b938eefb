"""Shared helpers for the interchange tests: where the corpus is, and a structural checker."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    return Path(os.environ.get("FOLDLOG_SHARED") or REPO.parent / "shared")


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = shared_dir() / "corpus"
    if not path.is_dir():
        pytest.fail(f"corpus not found at {path} (set FOLDLOG_SHARED)")
    return path


@pytest.fixture(scope="session")
def seed_v0_lines() -> list[str]:
    """The version-0 example log embedded in seed 003, line by line."""
    seeds = sorted((shared_dir() / "seeds").glob("003_*.txt"))
    assert seeds, "seed 003 not found"
    lines = [ln for ln in seeds[0].read_text(encoding="utf-8").splitlines() if ln.startswith('{"type":')]
    assert len(lines) == 10
    return lines


def check_well_formed(events: list[Any]) -> None:
    """Everything log-format.md asks of a converted event sequence (seqs are local indices)."""
    surface: list[int] = []
    calls: dict[str, int] = {}  # call id -> tool/call seq
    offered: set[str] = set()  # ids in assistant tool_calls
    turn_open = step_open = False
    for seq, ev in enumerate(events):
        assert json.loads(json.dumps(ev.data)) == ev.data
        sources = ev.source_event_seqs or []
        assert len(set(sources)) == len(sources) and all(0 <= s < seq for s in sources), (seq, sources)
        t = ev.type
        if t == "turn/start":
            assert not turn_open
            turn_open = True
        elif t == "turn/end":
            assert turn_open and not step_open
            turn_open = False
            assert isinstance(ev.data["reason"]["kind"], str)
        elif t == "step/start":
            assert turn_open and not step_open
            step_open = True
        elif t == "step/end":
            assert step_open
            step_open = False
        elif t == "assistant/message":
            assert step_open
            for call in ev.data["message"].get("tool_calls", []):
                assert call["id"] not in offered, f"call id {call['id']} reused"
                offered.add(call["id"])
        elif t == "tool/call":
            assert ev.data["callId"] in offered
            calls[ev.data["callId"]] = seq
        elif t == "tool/result":
            msg = ev.data["message"]
            assert set(msg) >= {"role", "toolCallId", "toolName", "content", "isError"}
            if sources:
                assert sources == [calls[msg["toolCallId"]]]
        if ev.surface_op is None:
            assert t not in ("user/message", "assistant/message", "tool/result", "system/message"), t
        elif ev.surface_op == "append":
            surface.append(seq)
        else:
            op = ev.surface_op
            assert op["op"] == "fold"
            i, j = surface.index(op["start"]), surface.index(op["end"])
            removed = [s for s in surface[i : j + 1] if s not in op["keep"]]
            assert sorted(sources) == sorted(removed)
            surface = [s for s in surface if s not in removed] + [seq]
    assert not turn_open and not step_open
