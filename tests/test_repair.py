"""The load normalizer on real files: every rule, and repair as appended events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldlog import Session

PLACEHOLDER = "[no result: the previous turn was interrupted before this tool call completed]"


def write_log(path: Path, messages: list[dict[str, object]]) -> Path:
    s = Session()
    for m in messages:
        s.add(m)
    s.save(path)
    return path


def call(cid: str, name: str, args: str) -> dict[str, object]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def test_empty_names_are_filled_from_results(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "a.jsonl",
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", "", "{}"), call("b", "", "{}")]},
            {"role": "tool", "tool_call_id": "b", "name": "grep", "content": "B"},
            {"role": "tool", "tool_call_id": "a", "name": "ls", "content": "A"},
        ],
    )
    s = Session.load(p)
    assert s.normalized_dirty and s.repair_report["names_filled"] == 2
    names = [c["function"]["name"] for c in s.derive_messages()[1]["tool_calls"]]
    assert names == ["ls", "grep"]
    before = p.read_bytes()
    assert len(Session.load(p).events) == 5, "four recorded events plus the repair, in memory"
    assert p.read_bytes() == before, "load never writes"


@pytest.mark.parametrize(
    ("cut", "fixed"),
    [
        ('{"path": "src/ma', {"path": "src/ma"}),
        ('{"a": 1, ', {"a": 1}),
        ('{"a":', {"a": None}),
        ('{"a": [1, {"b": "x\\', {"a": [1, {"b": "x"}]}),
        ('{"q": "caf\\u00', {"q": "caf"}),
        ('{"a"', {}),
    ],
)
def test_truncated_arguments_are_closed(tmp_path: Path, cut: str, fixed: object) -> None:
    p = write_log(
        tmp_path / "t.jsonl",
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", "read", cut)]},
            {"role": "tool", "tool_call_id": "a", "name": "read", "content": "x"},
        ],
    )
    s = Session.load(p)
    assert s.normalized_dirty
    assert json.loads(s.derive_messages()[1]["tool_calls"][0]["function"]["arguments"]) == fixed


def test_empty_arguments_stay_empty(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "e.jsonl",
        [
            {"role": "assistant", "content": "", "tool_calls": [call("a", "now", "")]},
            {"role": "tool", "tool_call_id": "a", "name": "now", "content": "x"},
        ],
    )
    s = Session.load(p)
    assert not s.normalized_dirty
    assert s.derive_messages()[0]["tool_calls"][0]["function"]["arguments"] == ""


def test_dangling_calls_get_placeholder_results(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "d.jsonl",
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("a", "ls", "{}"), call("b", "cat", "{}")],
            },
            {"role": "tool", "tool_call_id": "a", "name": "ls", "content": "A"},
            {"role": "user", "content": "and then?"},
        ],
    )
    s = Session.load(p)
    msgs = s.derive_messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "user"]
    assert msgs[3]["tool_call_id"] == "b" and msgs[3]["content"] == PLACEHOLDER


def test_orphan_results_are_kept(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "o.jsonl",
        [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "zz", "name": "x", "content": "?"},
        ],
    )
    s = Session.load(p)
    assert not s.normalized_dirty
    assert [m["role"] for m in s.derive_messages()] == ["user", "tool"]
    assert [m["role"] for m in s.wire_messages()] == ["user"], "dropped only when sending"


def test_a_foreign_id_result_leaves_its_call_dangling(tmp_path: Path) -> None:
    # pairing as on send: a result pairs by id, only an id-less one by position
    p = write_log(
        tmp_path / "f.jsonl",
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", "ls", "{}")]},
            {"role": "tool", "tool_call_id": "zzz", "name": "ls", "content": "out"},
        ],
    )
    s = Session.load(p)
    assert s.normalized_dirty and s.repair_report["results_added"] == 1
    msgs = s.derive_messages()
    assert [m.get("tool_call_id") for m in msgs[2:]] == ["zzz", "a"], "the orphan is kept"
    assert msgs[3]["content"] == PLACEHOLDER
    wire = s.wire_messages()
    assert [m.get("tool_call_id") for m in wire[2:]] == ["a"], "the orphan is dropped on send"


def test_an_id_less_result_still_answers_by_position(tmp_path: Path) -> None:
    p = write_log(
        tmp_path / "n.jsonl",
        [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", "ls", "{}")]},
        ],
    )
    # writers refuse a tool result without its call id now (issue 14); older logs hold them
    result = {"role": "tool", "toolName": "ls", "content": "out", "isError": False}
    line = {"type": "tool/result", "seq": 2, "time": 1, "data": {"turn": 0, "step": 0, "message": result}}
    with p.open("a") as f:
        f.write(json.dumps({**line, "surfaceOp": "append"}) + "\n")
    s = Session.load(p)
    assert not s.normalized_dirty
    assert s.wire_messages()[2]["content"] == "out"


def test_open_turn_after_a_crash_is_closed(seed_log: Path) -> None:
    lines = seed_log.read_text().splitlines()[:7]  # the crash came before the tool result
    seed_log.write_text("\n".join(lines) + "\n")
    s = Session.load(seed_log)
    assert s.events.types()[7:] == ["tool/result", "step/end", "turn/end"]
    assert s.events[7]["data"]["message"]["content"] == PLACEHOLDER
    assert s.events[7]["sourceEventSeqs"] == [6]
    assert s.events[9]["data"]["reason"] == {"kind": "interrupted"}
    assert s.open_turn is None


def test_repair_on_open_appends_and_never_rewrites(seed_log: Path) -> None:
    lines = seed_log.read_text().splitlines()[:7]
    original = "\n".join(lines) + "\n"
    seed_log.write_text(original)
    with Session.open(seed_log) as s:
        assert s.normalized_dirty
    after = seed_log.read_text()
    assert after.startswith(original), "history before the repair is byte-for-byte intact"
    assert len(after.splitlines()) == 10
    again = Session.load(seed_log)
    assert not again.normalized_dirty
