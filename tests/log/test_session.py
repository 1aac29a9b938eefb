"""The Session API over the Rust log: recording, deriving, immutability, validation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import foldlog
from foldlog import Session
from foldlog.errors import CorruptLogError, InvalidEventError, UnsupportedFormatError


def test_seed_example_loads_and_derives(seed_log: Path) -> None:
    s = Session.load(seed_log)
    msgs = s.derive_messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool"]
    assert msgs[0]["content"] == "Fix the typo in the example README."
    assert msgs[1]["content"] == "I'll search"
    call = msgs[1]["tool_calls"][0]
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"]) == {"command": "grep example README.md"}
    assert msgs[2] == {"role": "tool", "tool_call_id": "call_1", "name": "bash", "content": "example"}
    assert not s.normalized_dirty
    assert len(s.events) == 10
    assert s.events[9]["data"]["reason"] == {"kind": "completed"}


def test_add_records_messages_as_events() -> None:
    s = Session(system="be brief")
    assert not s.has_content()
    s.add({"role": "user", "content": "hi"})
    s.add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}],
        }
    )
    s.add({"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a b"})
    assert s.has_content()
    assert s.events.types() == ["system/message", "user/message", "assistant/message", "tool/result"]
    tool = s.events[3]
    assert tool["data"]["message"] == {
        "role": "tool",
        "toolCallId": "c1",
        "toolName": "ls",
        "content": "a b",
        "isError": False,
    }
    assert tool["surfaceOp"] == "append"
    assert s.surface_seqs() == [0, 1, 2, 3]


def test_malformed_tool_calls_are_recorded_as_given() -> None:
    s = Session()
    bad = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "x", "function": {"name": "", "arguments": '{"a'}}],
    }
    s.add(bad)
    assert s.events[0]["data"]["message"] == bad


@pytest.mark.parametrize(
    "content",
    [math.nan, math.inf, {1: "x"}, {"a": object()}, b"bytes", {"s": {1, 2}}, 2**70],
)
def test_non_json_safe_data_is_refused_before_writing(content: object) -> None:
    s = Session()
    with pytest.raises(InvalidEventError) as err:
        s.add({"role": "user", "content": content})
    assert "content" in str(err.value)
    assert len(s.events) == 0
    assert isinstance(err.value, ValueError) and isinstance(err.value, foldlog.FoldlogError)


def test_bad_messages_name_the_problem() -> None:
    s = Session()
    with pytest.raises(InvalidEventError, match="role"):
        s.add({"content": "x"})
    with pytest.raises(InvalidEventError, match="wizard"):
        s.add({"role": "wizard", "content": "x"})
    with pytest.raises(InvalidEventError, match="mapping"):
        s.add("hello")  # type: ignore[arg-type]
    with pytest.raises(InvalidEventError, match="unknown event type"):
        s.append_event("made/up", {})
    with pytest.raises(InvalidEventError, match="surfaceOp"):
        s.append_event("user/message", {"role": "user", "content": "x"})
    with pytest.raises(InvalidEventError, match="not on the surface"):
        s.append_event(
            "user/message",
            {"role": "user", "content": "x"},
            surface_op={"op": "replace", "start": 5, "end": 5},
        )
    assert len(s.events) == 0


def test_derived_messages_are_immutable_and_incremental() -> None:
    s = Session(system="s")
    s.add({"role": "user", "content": "one"})
    first = s.derive_messages()
    with pytest.raises(TypeError):
        first[1]["content"] = "changed"  # type: ignore[index]
    with pytest.raises((TypeError, AttributeError)):
        first[1].update({"content": "x"})  # type: ignore[attr-defined]
    s.add({"role": "assistant", "content": "two"})
    second = s.derive_messages()
    assert len(first) == 2 and len(second) == 3
    assert second[1] is first[1], "appends do not re-project earlier messages"
    # issue 14: snapshot() is now a list of plain deep copies (was the frozen tuple itself)
    assert s.snapshot() == list(second)
    # issue 17: the history is a lazy sequence, not a tuple: json takes it as a list
    assert json.loads(json.dumps(list(second))) == [dict(m) for m in second]


def test_replace_resets_the_surface_and_bumps_the_version() -> None:
    s = Session(system="s")
    for i in range(3):
        s.add({"role": "user", "content": f"u{i}"})
    before = s.rewrite_version
    old = s.snapshot()
    s.replace([{"role": "system", "content": "s"}, {"role": "user", "content": "summary"}])
    assert s.rewrite_version == before + 1
    assert [m["content"] for m in s.derive_messages()] == ["s", "summary"]
    assert len(old) == 4, "a snapshot taken before is unchanged"
    assert len(s.events) == 6, "nothing is deleted from the log"
    with pytest.raises(InvalidEventError):
        s.replace([])


def test_wire_messages_apply_the_strict_normalizer() -> None:
    s = Session()
    s.add({"role": "user", "content": "go"})
    s.add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "cat", "arguments": "{}"}},
            ],
        }
    )
    s.add({"role": "tool", "tool_call_id": "b", "name": "wrong", "content": "B"})
    s.add({"role": "tool", "tool_call_id": "zzz", "name": "ghost", "content": "orphan"})
    wire = s.wire_messages()
    assert [(m["role"], m.get("tool_call_id"), m.get("name")) for m in wire] == [
        ("user", None, None),
        ("assistant", None, None),
        ("tool", "a", "ls"),
        ("tool", "b", "cat"),
    ]
    assert "[no result" in wire[2]["content"]
    assert json.loads(s.wire_json()) == wire
    # the log itself is untouched
    assert len(s.derive_messages()) == 4


def test_subscribers_see_each_event_and_cannot_break_the_writer() -> None:
    s = Session()
    seen: list[str] = []
    unsubscribe = s.stream.subscribe(lambda e: seen.append(e["type"]))

    def broken(e: object) -> None:
        raise RuntimeError("boom")

    s.stream.subscribe(broken)
    s.add({"role": "user", "content": "x"})
    s.append_event("turn/start", {"turn": 1})
    assert seen == ["user/message", "turn/start"]
    unsubscribe()
    s.append_event("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert seen == ["user/message", "turn/start"]


def test_save_and_load_round_trip(tmp_path: Path, seed_log: Path) -> None:
    s = Session.load(seed_log)
    out = tmp_path / "copy.jsonl"
    s.save(out)
    assert out.read_bytes() == seed_log.read_bytes(), "a valid log round-trips byte for byte"
    fresh = Session(system="x", meta={"project": "demo"})
    fresh.add({"role": "user", "content": "héllo ✓"})
    fresh.save(out)
    again = Session.load(out)
    assert again.id == fresh.id
    assert again.header is not None and again.header["meta"] == {"project": "demo"}
    assert again.derive_messages() == fresh.derive_messages()
    assert out.stat().st_mode & 0o777 == 0o600


def test_corruption_names_file_and_line(seed_log: Path) -> None:
    lines = seed_log.read_text().splitlines()
    lines[3] = lines[3][:25]
    seed_log.write_text("\n".join(lines) + "\n")
    with pytest.raises(CorruptLogError) as err:
        Session.load(seed_log)
    assert err.value.line == 4
    assert err.value.path == str(seed_log)
    assert "line 4" in str(err.value) and str(seed_log) in str(err.value)


def test_torn_tail_is_cut_and_reported(seed_log: Path) -> None:
    data = seed_log.read_bytes()
    seed_log.write_bytes(data[:-15])
    s = Session.load(seed_log)
    assert s.torn_tail is not None and s.torn_tail["line"] == 10
    assert len(s.events) == 9 + 1, "nine intact events plus the repair closing the open turn"
    assert s.normalized_dirty
    assert s.events[9]["data"]["reason"] == {"kind": "interrupted"}


def test_newer_format_is_refused(tmp_path: Path, seed_log: Path) -> None:
    p = tmp_path / "new.jsonl"
    p.write_text('{"type":"session","version":7,"id":"x"}\n')
    with pytest.raises(UnsupportedFormatError, match="newer"):
        Session.load(p)
    p.write_text(seed_log.read_text() + '{"type":"quantum/event","seq":10,"time":1,"data":{}}\n')
    with pytest.raises(UnsupportedFormatError, match="newer format"):
        Session.load(p)


# --- issue 14, item 7 -----------------------------------------------------------------------


def test_loading_an_empty_file_is_refused_but_opening_one_starts_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(CorruptLogError, match="empty file: no header") as err:
        Session.load(empty)
    assert err.value.path == str(empty) and err.value.line == 1
    with pytest.raises(CorruptLogError, match="empty file: no header"):
        Session.from_bytes(b"\n")
    for target in (empty, tmp_path / "missing.jsonl"):
        with Session.open(target) as s:
            assert len(s) == 0
        header = Session.load(target).header
        assert header is not None and header["id"] == target.stem


def test_an_empty_assistant_message_is_not_content() -> None:
    s = Session(system="sys")
    s.append_event(
        "assistant/message",
        {"turn": 1, "step": 1, "message": {"role": "assistant", "content": ""}, "usage": {"promptTokens": 5}},
        surface_op="append",
    )
    assert not s.has_content(), "kept only for its usage: the model sees nothing of it"
    s.add({"role": "user", "content": "hi"})
    assert s.has_content()


def test_snapshot_is_a_plain_mutable_deep_copy() -> None:
    s = Session(system="sys")
    s.add(
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "u"}}],
        }
    )
    snap = s.snapshot()
    assert type(snap) is list and all(type(m) is dict for m in snap)
    assert type(snap[1]["content"]) is list and type(snap[1]["content"][1]["image_url"]) is dict
    snap[1]["content"][1]["image_url"]["url"] = "changed"
    snap.append({"role": "user", "content": "mine"})
    assert s.derive_messages()[1]["content"][1]["image_url"]["url"] == "u", "the log is not changed"
    assert s.snapshot() != snap
    # the derived messages themselves stay frozen and shared (zero-copy)
    derived = s.derive_messages()
    assert derived[1] is s.derive_messages()[1]
    with pytest.raises(TypeError):
        derived[1]["content"] = "x"  # type: ignore[index]


def test_thaw_is_public_and_gives_plain_copies() -> None:
    from types import MappingProxyType

    s = Session(system="sys")
    s.add({"role": "user", "content": "hi"})
    plain = foldlog.thaw(s.derive_messages())
    assert plain == s.snapshot() and type(plain) is list and type(plain[0]) is dict
    assert foldlog.thaw(MappingProxyType({"a": (1, [2])})) == {"a": [1, [2]]}
    assert foldlog.thaw("text") == "text"
    assert "thaw" in foldlog.__all__


def test_a_header_names_its_parent_and_refuses_a_malformed_link(tmp_path: Path) -> None:
    link = {"id": "p-1", "kind": "fork", "atSeq": 3}
    assert Session(parent=link).parent == link
    with Session.open(tmp_path / "child.jsonl", system="s", parent=link) as s:
        assert s.parent == link
    assert Session.load(tmp_path / "child.jsonl").parent == link
    assert Session().parent is None
    for bad in ({"kind": "fork"}, {"id": ""}, {"id": 3}):
        with pytest.raises(InvalidEventError, match="parent"):
            Session(parent=bad)
