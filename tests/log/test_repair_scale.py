"""Issue 26, item 9: load repair is linear in the calls of one message. 6,000 calls, half of them
unanswered, took 24 s to load while it was quadratic; 20,000 now load in a fraction of a second.
The guard here is generous (a regression test, not a benchmark: `benches/repair.rs` measures)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from foldlog import Session

CALLS = 20_000
PLACEHOLDER = "[no result: the previous turn was interrupted before this tool call completed]"


def _log_with_many_calls(path: Path, n: int) -> None:
    """One assistant message with `n` calls; only the even ones answered; a user message after."""
    lines: list[dict[str, object]] = [
        {"type": "session", "version": 1, "id": "s", "createdAt": 0, "parent": None, "meta": {}},
        {
            "type": "user/message",
            "seq": 0,
            "time": 0,
            "data": {"role": "user", "content": "go"},
            "surfaceOp": "append",
        },
    ]
    calls = [
        {"id": f"c{k}", "type": "function", "function": {"name": "ls", "arguments": "{}"}} for k in range(n)
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    lines.append(
        {
            "type": "assistant/message",
            "seq": 1,
            "time": 0,
            "data": {"turn": 1, "step": 1, "message": message},
            "surfaceOp": "append",
        }
    )
    for k in range(0, n, 2):
        result = {"role": "tool", "toolCallId": f"c{k}", "toolName": "ls", "content": "out", "isError": False}
        data = {"turn": 1, "step": 1, "message": result}
        lines.append(
            {"type": "tool/result", "seq": len(lines) - 1, "time": 0, "data": data, "surfaceOp": "append"}
        )
    last = {"role": "user", "content": "next"}
    lines.append(
        {"type": "user/message", "seq": len(lines) - 1, "time": 0, "data": last, "surfaceOp": "append"}
    )
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_twenty_thousand_calls_in_one_message_load_in_linear_time(tmp_path: Path) -> None:
    path = tmp_path / "many.jsonl"
    _log_with_many_calls(path, CALLS)
    started = time.perf_counter()
    session = Session.load(path)
    took = time.perf_counter() - started
    assert session.repair_report["results_added"] == CALLS // 2
    msgs = session.derive_messages()
    assert len(msgs) == 2 + CALLS + 1 and msgs[-1]["content"] == "next"
    placeholders = [m for m in msgs if m.get("content") == PLACEHOLDER]
    assert [m["tool_call_id"] for m in placeholders] == [f"c{k}" for k in range(1, CALLS, 2)]
    # quadratic, this took minutes (2,000 calls alone took 7 s in a release build)
    assert took < 10, f"loading {CALLS} calls took {took:.1f} s"
