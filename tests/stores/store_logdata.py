"""Valid foldlog logs built step by step (log-format.md), and a checker for what a store returns."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T0 = 1_755_000_000_000


def line(event: dict[str, Any]) -> bytes:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def header(session_id: str, created: int = T0) -> bytes:
    return line(
        {"type": "session", "version": 1, "id": session_id, "createdAt": created, "parent": None, "meta": {}}
    )


def header_line(session_id: str, created: int = T0) -> bytes:
    """The header as ``open_writer`` takes it: one line, without its newline."""
    return header(session_id, created)[:-1]


def step_events(first_seq: int, step: int, n_steps: int, note: str) -> list[dict[str, Any]]:
    """The events of step ``step`` (0-based) of a one-turn tool loop of ``n_steps`` steps."""
    events: list[dict[str, Any]] = []

    def add(type_: str, data: dict[str, Any], **extra: Any) -> int:
        seq = first_seq + len(events)
        events.append({"type": type_, "seq": seq, "time": T0 + seq, "data": data, **extra})
        return seq

    turn, n = 1, step + 1
    if step == 0:
        add("turn/start", {"turn": turn})
        add("user/message", {"role": "user", "content": f"task ({note})"}, surfaceOp="append")
    add("step/start", {"turn": turn, "step": n})
    usage = {"prompt_tokens": 100 + step, "completion_tokens": 10}
    if step < n_steps - 1:
        call_id = f"call_{step}"
        args = json.dumps({"cmd": f"echo {step}"})
        call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": args}}
        msg = {"role": "assistant", "content": f"step {step} by {note}", "tool_calls": [call]}
        add(
            "assistant/message", {"turn": turn, "step": n, "message": msg, "usage": usage}, surfaceOp="append"
        )
        call_seq = add(
            "tool/call", {"turn": turn, "step": n, "callId": call_id, "name": "bash", "arguments": args}
        )
        result = {
            "role": "tool",
            "toolCallId": call_id,
            "toolName": "bash",
            "content": str(step),
            "isError": False,
        }
        add(
            "tool/result",
            {"turn": turn, "step": n, "message": result},
            surfaceOp="append",
            sourceEventSeqs=[call_seq],
        )
    else:
        msg = {"role": "assistant", "content": f"done by {note}"}
        add(
            "assistant/message", {"turn": turn, "step": n, "message": msg, "usage": usage}, surfaceOp="append"
        )
    add("step/end", {"turn": turn, "step": n})
    if step == n_steps - 1:
        add("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
    return events


def step_batch(first_seq: int, step: int, n_steps: int, note: str) -> tuple[bytes, int]:
    events = step_events(first_seq, step, n_steps, note)
    return b"".join(line(e) for e in events), len(events)


def parse_log(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Header and events of a store's log, checking the framing every store must keep."""
    assert data.endswith(b"\n"), "a log ends with a newline"
    lines = data[:-1].split(b"\n")
    head = json.loads(lines[0])
    assert head["type"] == "session"
    events = [json.loads(x) for x in lines[1:]]
    assert [e["seq"] for e in events] == list(range(len(events))), "seqs are 0, 1, 2, … without gaps"
    return head, events


def load_with_reader(data: bytes, tmp: Path) -> tuple[int, int]:
    """Load the log as foldlog does (``Session.load`` once it is there, else the Rust core reader
    behind it), check it needs no repair, and return (events, derived messages)."""
    try:
        from foldlog.log.session import Session
    except ImportError:
        from foldlog import _core

        log, report = _core.Log.parse(data)
        assert report["torn"] is None and not report["missing_newline"], report
        assert _core.repair_needed(log) == 0
        return len(log), log.derived_len()
    path = tmp / "loaded.jsonl"
    path.write_bytes(data)
    session = Session.load(str(path))
    assert not session.normalized_dirty
    return len(session.events), len(session.derive_messages())
