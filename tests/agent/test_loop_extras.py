"""Issue 14, item 7 (the agent's part): run_sync tracebacks and recorded stream chunks."""

from __future__ import annotations

import traceback
from pathlib import Path

import pytest
from agent_helpers import call, of_type, reply

from foldlog import Agent, Options, Session, tool
from foldlog.errors import APIError, StreamInterrupted
from foldlog.providers import Scripted


@tool(read_only=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


# --- run_sync --------------------------------------------------------------------------------


def test_run_sync_errors_carry_no_spurious_event_loop_error(session: Session) -> None:
    agent = Agent(Scripted([APIError("bad request", status=400)]), [], session)
    with pytest.raises(APIError) as info:
        agent.run_sync("x")
    err = info.value
    # the error is raised as the agent raised it: nothing chained to "no running event loop"
    assert err.__context__ is None and err.__cause__ is None
    text = "".join(traceback.format_exception(err))
    assert "no running event loop" not in text
    assert "During handling of the above exception" not in text


def test_run_sync_inside_a_running_loop_is_refused(session: Session) -> None:
    import asyncio

    agent = Agent(Scripted([reply("ok")]), [], session)

    async def inside() -> None:
        agent.run_sync("x")

    with pytest.raises(RuntimeError, match="cannot be called from a running event loop"):
        asyncio.run(inside())


# --- Options.record_chunks ------------------------------------------------------------------


def _run(path: Path, record: bool) -> Session:
    p = Scripted(
        [
            reply("adding", call("add", {"a": 1, "b": 2}, "c1"), reasoning_content="think"),
            reply("the sum is 3"),
        ]
    )
    with Session.open(path, system="calc") as s:
        assert Agent(p, [add], s, Options(record_chunks=record)).run_sync("1+2?") == "the sum is 3"
    return Session.load(path)


def test_record_chunks_logs_each_chunk_and_the_message_lists_them(tmp_path: Path) -> None:
    plain = _run(tmp_path / "plain.jsonl", record=False)
    recorded = _run(tmp_path / "chunks.jsonl", record=True)

    # off by default: no chunk events, no sources on assistant messages
    assert of_type(plain, "assistant/chunk") == []
    assert all("sourceEventSeqs" not in e for e in of_type(plain, "assistant/message"))

    chunks = of_type(recorded, "assistant/chunk")
    assert chunks and all("surfaceOp" not in e for e in chunks)
    by_seq = {e["seq"]: e for e in chunks}
    messages = of_type(recorded, "assistant/message")
    assert len(messages) == 2
    covered: list[int] = []
    for msg in messages:
        sources = list(msg["sourceEventSeqs"])
        assert sources == sorted(sources) and all(s in by_seq for s in sources)
        parts = [by_seq[s]["data"] for s in sources]
        assert all(p["turn"] == msg["data"]["turn"] and p["step"] == msg["data"]["step"] for p in parts)
        text = "".join(p["chunk"]["text"] for p in parts if p["chunk"]["type"] == "text-delta")
        assert text == msg["data"]["message"]["content"]
        covered += sources
    assert sorted(covered) == sorted(by_seq)  # every chunk belongs to exactly one message
    kinds = [by_seq[s]["data"]["chunk"]["type"] for s in messages[0]["sourceEventSeqs"]]
    assert kinds[0] == "reasoning-delta" and "tool-call-start" in kinds and "tool-call-delta" in kinds
    assert kinds[-2:] == ["usage", "finish"]
    delta = next(
        by_seq[s]["data"]["chunk"]
        for s in messages[0]["sourceEventSeqs"]
        if by_seq[s]["data"]["chunk"]["type"] == "tool-call-delta"
    )
    assert delta == {"type": "tool-call-delta", "id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'}

    # derivation is unchanged, and so is what is sent
    assert recorded.derive_messages() == plain.derive_messages()
    assert recorded.wire_messages() == plain.wire_messages()
    assert not recorded.normalized_dirty


def test_recorded_chunks_survive_reload_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    p = Scripted([reply("hello there")])
    with Session.open(path, system="s") as s:
        Agent(p, [], s, Options(record_chunks=True)).run_sync("hi")
        live = [dict(e) for e in s.events]
    loaded = [dict(e) for e in Session.load(path).events]
    assert loaded == live
    assert [e["type"] for e in loaded].count("assistant/chunk") == len(
        of_type(Session.load(path), "assistant/message")[0]["sourceEventSeqs"]
    )


def test_an_interrupted_reply_lists_the_chunks_it_got(session: Session) -> None:
    p = Scripted(
        [reply("partial", raise_after=StreamInterrupted("cut", partial_text="partial")), reply("ok")]
    )
    Agent(p, [], session, Options(record_chunks=True)).run_sync("q")
    first, second = of_type(session, "assistant/message")
    assert first["data"]["interrupted"] is True
    texts = [session.events[s]["data"]["chunk"]["text"] for s in first["sourceEventSeqs"]]
    assert "".join(texts) == "partial"
    assert all(s > max(first["sourceEventSeqs"]) for s in second["sourceEventSeqs"])


def test_an_empty_reply_lists_its_chunks_explicitly(session: Session) -> None:
    p = Scripted([{"content": "", "finish_reason": "length", "usage": {"prompt_tokens": 5}}])
    Agent(p, [], session, Options(record_chunks=True)).run_sync("q")
    [msg] = of_type(session, "assistant/message")
    kinds = [session.events[s]["data"]["chunk"]["type"] for s in msg["sourceEventSeqs"]]
    assert kinds == ["usage", "finish"]
