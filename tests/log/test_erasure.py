"""Erasure (docs/log-format.md, "Erasure"): the content of chosen events removed, the log still
valid, and every reader of it — derivation, counts, forks, exports, traces, the viewer — following."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.errors import ErasureError, FoldlogError
from foldlog.interchange.exports import EXPORT_FORMATS, export
from foldlog.interchange.exports.view import render
from foldlog.log.erasure import ERASED, forks_holding, tombstone_data
from foldlog.log.forks import fork_session
from foldlog.log.grammar import kinds
from foldlog.log.grammar.reader import Erasure, Reply, Result, read
from foldlog.log.grammar.writer import EventWriter, assistant_message
from foldlog.telemetry.replay import export_session
from tests.telemetry.otel_helpers import memory_provider, spans

SECRET = "SECRET-7f3a91-card-4111"


def conversation(s: Session) -> dict[str, int]:
    """One turn whose user message, reply (text, reasoning, a call's arguments) and tool result
    hold the secret; a second turn without it. Returns the seqs by role."""
    w = EventWriter.on(s)
    w.turn_start(1)
    user = w.user({"role": "user", "content": f"my card is {SECRET}", "name": "alice"})
    w.step_start(1, 1)
    args = json.dumps({"path": f"/home/{SECRET}.txt"})
    reply = w.assistant(
        1,
        1,
        assistant_message(f"reading {SECRET}", reasoning=f"think {SECRET}", calls=[("c1", "read", args)]),
        usage={"promptTokens": 40, "completionTokens": 9},
    )
    call = w.tool_call(1, 1, "c1", "read", args)
    result = w.tool_result(1, 1, "c1", "read", f"file of {SECRET}", False, call_seq=call)
    w.step_end(1, 1)
    w.turn_end(1, "completed")
    w.turn_start(2)
    later = w.user({"role": "user", "content": "what is the weather"})
    w.turn_end(2, "completed")
    return {"user": user, "reply": reply, "call": call, "result": result, "later": later}


def secret_events(s: Session) -> list[int]:
    return [i for i, ev in enumerate(s.events) if SECRET in json.dumps(dict(ev), default=list)]


@pytest.fixture
def erased() -> tuple[Session, dict[str, int]]:
    s = Session("You are terse.")
    seqs = conversation(s)
    s.erase(secret_events(s), "subject access request #12")
    return s, seqs


def test_tombstones_keep_the_structure_and_drop_the_content(erased: tuple[Session, dict[str, int]]) -> None:
    s, seqs = erased
    assert SECRET.encode() not in s.to_bytes()
    messages = s.derive_messages()
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    user, reply, result = messages[1], messages[2], messages[3]
    assert user["content"] == ERASED and "name" not in user
    assert reply["content"] == ERASED and "reasoning_content" not in reply
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in reply["tool_calls"]] == [
        ("c1", "read", "{}")
    ]
    assert (result["tool_call_id"], result["name"], result["content"]) == ("c1", "read", ERASED)
    # the result still answers its call: the send normalizer fills nothing in
    assert [m.get("content") for m in s.wire_messages()] == [m.get("content") for m in messages]
    assert messages[4]["content"] == "what is the weather"
    call = s.events[seqs["call"]]["data"]
    assert (call["callId"], call["name"], call["arguments"]) == ("c1", "read", "{}")
    # usage is accounting, not content: it stays with the reply
    assert s.events[seqs["reply"]]["data"]["usage"] == {"promptTokens": 40, "completionTokens": 9}


def test_the_erasure_event_names_seqs_reason_and_time(erased: tuple[Session, dict[str, int]]) -> None:
    s, seqs = erased
    last = s.events[len(s) - 1]
    assert last["type"] == kinds.ERASURE
    wanted = sorted([seqs["user"], seqs["reply"], seqs["call"], seqs["result"]])
    assert list(last["data"]["seqs"]) == wanted
    assert last["data"]["reason"] == "subject access request #12"
    assert isinstance(last["data"]["at"], int)
    assert set(last["data"]) == {"seqs", "reason", "at"}
    for seq in wanted:
        assert s.events[seq]["data"]["erased"] == last["seq"]
    record = list(read(s.events))[-1]
    assert isinstance(record, Erasure)
    assert (list(record.seqs), record.reason) == (wanted, "subject access request #12")


def test_the_reader_reads_tombstones_as_the_records_they_were(erased: tuple[Session, dict[str, int]]) -> None:
    s, seqs = erased
    records = {r.seq: r for r in read(s.events)}
    reply, result = records[seqs["reply"]], records[seqs["result"]]
    assert isinstance(reply, Reply) and reply.content == ERASED
    assert [(c.id, c.name) for c in reply.calls] == [("c1", "read")]
    assert isinstance(result, Result) and (result.call_id, result.content) == ("c1", ERASED)


def test_the_erased_log_loads_again_without_repair(erased: tuple[Session, dict[str, int]]) -> None:
    s, _ = erased
    again = Session.from_bytes(s.to_bytes())
    assert not again.normalized_dirty
    assert list(again.derive_messages()) == list(s.derive_messages())


@pytest.mark.parametrize(
    ("seq", "problem"),
    [
        (-1, "the header (seq -1) cannot be erased"),
        (99, "no event #99 to erase (events 0..12)"),
        (12, "is an erasure record"),
        (2, "was already erased (by event #12)"),
    ],
)
def test_what_cannot_be_erased_is_refused_by_name(
    erased: tuple[Session, dict[str, int]], seq: int, problem: str
) -> None:
    s, _ = erased
    before = s.to_bytes()
    with pytest.raises(ErasureError, match=re.escape(problem)) as info:
        s.erase([seq], "again")
    assert isinstance(info.value, FoldlogError)
    assert s.to_bytes() == before


def test_an_empty_reason_or_no_seqs_is_refused() -> None:
    s = Session("sys")
    s.add({"role": "user", "content": "hello"})
    with pytest.raises(ErasureError, match="needs a reason"):
        s.erase([1], "  ")
    with pytest.raises(ErasureError, match="no events named"):
        s.erase([], "why")
    assert len(s) == 2


def test_token_counts_are_those_of_the_tombstones(tmp_path: Path) -> None:
    s = Session.open(tmp_path / "t.jsonl", system="sys")
    s.model = "deepseek-v4-flash"
    s.add({"role": "user", "content": f"{SECRET} " * 300})
    s.flush()
    line = (tmp_path / "t.jsonl").read_bytes().splitlines()[2]
    assert b'"tokens"' in line  # counted when written
    before = int(s.token_count())
    s.erase([1], "request")
    after = int(s.token_count())
    fresh = Session.from_bytes(s.to_bytes())
    fresh.model = "deepseek-v4-flash"
    assert after == int(fresh.token_count()) < before - 300
    tomb = (tmp_path / "t.jsonl").read_bytes().splitlines()[2]
    assert b'"tokens"' not in tomb  # the old count was of the content that is gone
    s.close()


def test_a_live_session_goes_on_from_the_erased_log(tmp_path: Path) -> None:
    s = Session.open(tmp_path / "live.jsonl", system="sys")
    s.add({"role": "user", "content": SECRET})
    s.add({"role": "assistant", "content": "noted"})
    s.flush()
    s.erase([1], "request")
    s.add({"role": "user", "content": "next"})
    body = s.wire_json()
    assert SECRET.encode() not in body and ERASED.encode() in body
    s.release()
    assert [m["content"] for m in s.derive_messages()] == ["sys", ERASED, "noted", "next"]
    s.close()
    assert SECRET.encode() not in (tmp_path / "live.jsonl").read_bytes()
    assert len(Session.load(tmp_path / "live.jsonl")) == 5


def test_exports_traces_and_the_viewer_follow(tmp_path: Path) -> None:
    s = Session.open(tmp_path / "x.jsonl", system="sys")
    conversation(s)
    s.erase(secret_events(s), "request")
    for fmt in EXPORT_FORMATS:
        done = export(s, fmt)
        assert SECRET not in done.text + "".join(done.files.values()), fmt
        assert ERASED in done.text, fmt
    page = render(s, tmp_path, redact=False)
    assert SECRET not in page.html and ERASED in page.html
    provider, exporter = memory_provider()
    export_session(s, provider, capture_content=True)
    provider.force_flush()
    attributes = json.dumps([dict(sp.attributes or {}) for sp in spans(exporter)])
    assert ERASED in attributes and SECRET not in attributes
    s.close()


def test_a_fork_made_after_the_erasure_holds_no_erased_text(tmp_path: Path) -> None:
    s = Session("sys")
    seqs = conversation(s)
    s.erase(secret_events(s), "request")
    fork = fork_session(s, seqs["later"])
    assert SECRET.encode() not in fork.to_bytes()
    assert fork.derive_messages()[1]["content"] == ERASED


def test_a_copying_fork_made_before_keeps_its_copy_and_is_listed(tmp_path: Path) -> None:
    s = Session("sys")
    seqs = conversation(s)
    fork = fork_session(s, seqs["later"], tmp_path / "copy.jsonl")
    fork.close()
    erased = s.erase(secret_events(s), "request")
    assert SECRET.encode() in (tmp_path / "copy.jsonl").read_bytes()  # its own copy: not reached
    header = json.loads((tmp_path / "copy.jsonl").read_bytes().split(b"\n", 1)[0])
    assert forks_holding(s.id, erased.seqs, [("copy", header)]) == [("copy", list(erased.seqs))]
    other = {"parent": {"kind": "fork", "id": s.id, "atSeq": 0}}
    assert forks_holding(s.id, erased.seqs, [("early", other)]) == []


def test_a_file_fork_reads_the_parents_tombstones(tmp_path: Path) -> None:
    parent = Session.open(tmp_path / "p.jsonl", system="sys")
    seqs = conversation(parent)
    parent.flush()
    fork = fork_session(parent, seqs["result"])
    fork.add({"role": "user", "content": "and in the fork"})
    fork.flush()
    parent.erase(secret_events(parent), "request")
    assert fork.path is not None
    fork_path = fork.path
    fork.close()
    reloaded = Session.load(fork_path)
    assert SECRET.encode() not in reloaded.to_bytes()
    assert reloaded.derive_messages()[1]["content"] == ERASED
    # the fork's own file never held its parent's events, and cannot erase them itself
    again = Session.open(fork_path)
    with pytest.raises(ErasureError, match=r"event #1 is in the log of session p \(this fork reads"):
        again.erase([1], "request")
    again.close()
    parent.close()


def test_a_fork_erases_its_own_events_in_its_own_file(tmp_path: Path) -> None:
    parent = Session.open(tmp_path / "p.jsonl", system="sys")
    parent.add({"role": "user", "content": "hello"})
    fork = fork_session(parent, 1)
    mine = fork.add({"role": "user", "content": SECRET})
    fork.add({"role": "user", "content": "after"})
    fork.flush()
    fork.erase([mine], "request")
    assert fork.path is not None
    data = fork.path.read_bytes()
    assert SECRET.encode() not in data
    assert data.count(b"\n") == 4  # header, two own events, the erasure: no parent lines copied in
    assert [m["content"] for m in Session.load(fork.path).derive_messages()] == [
        "sys",
        "hello",
        ERASED,
        "after",
    ]
    fork.close()
    parent.close()


def test_every_kind_has_a_tombstone_without_its_text() -> None:
    text = "PRIVATE-TEXT"
    samples: dict[str, dict[str, Any]] = {
        kinds.TURN_END: {"turn": 1, "reason": {"kind": "error", "message": text}},
        kinds.APPROVAL_REQUEST: {
            "turn": 1,
            "step": 1,
            "calls": [{"callId": "c", "name": "rm", "arguments": text}],
        },
        kinds.APPROVAL_ANSWER: {"callId": "c", "approved": False, "reason": text},
        kinds.COMPACTION_SUMMARY: {"id": "k", "summary": text, "folded": [1], "kept": [], "mechanical": True},
        kinds.ASSISTANT_CHUNK: {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "text": text}},
        kinds.OUTPUT_VALIDATED: {
            "turn": 1,
            "step": 1,
            "name": "A",
            "mode": "tool",
            "retries": 0,
            "value": text,
        },
        kinds.REQUEST_HEADER: {"model": "m", "tools": [{"description": text}], "params": {}},
        "vendor/note": {"note": text},
    }
    for kind, data in samples.items():
        tomb = tombstone_data(kind, data, 9)
        assert text not in json.dumps(tomb), kind
        assert tomb["erased"] == 9
    blocks = tombstone_data(
        kinds.ASSISTANT_MESSAGE,
        {
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": text},
                    {"type": "tool_use", "id": "u1", "name": "ls", "input": {"p": text}},
                ],
            }
        },
        9,
    )
    assert blocks["message"]["content"] == [
        {"type": "text", "text": ERASED},
        {"type": "tool_use", "id": "u1", "name": "ls", "input": {}},
    ]


def test_the_checkpoint_beside_the_log_goes_with_the_erased_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foldlog.log import checkpoint
    from foldlog.log.checkpoint import checkpoint_path

    monkeypatch.setattr(checkpoint, "MIN_EVENTS", 1)  # checkpoint this short log too
    path = tmp_path / "c.jsonl"
    s = Session.open(path, system="sys")
    s.add({"role": "user", "content": SECRET})
    s.add({"role": "assistant", "content": "noted"})
    s.release()  # writes the checkpoint: it holds the surface's lines
    ckpt = checkpoint_path(path)
    assert ckpt.exists() and SECRET.encode() in ckpt.read_bytes()
    s.erase([1], "request")
    assert not ckpt.exists()
    s.release()  # a new one, of the tombstones
    assert not ckpt.exists() or SECRET.encode() not in ckpt.read_bytes()
    s.close()
    assert Session.open(path).derive_messages()[1]["content"] == ERASED
