"""A turn stays bounded and honest: ``max_steps`` counts every step (text replies a hook or
steering continues too); stream text split inside a surrogate pair is joined, a lone surrogate
replaced; and any failure while recording a reply still closes the turn (``error``), so the next
run never starts inside it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from foldlog import Agent, MaxStepsExceeded, Options, Session
from foldlog.errors import InvalidEventError
from foldlog.providers import Scripted
from foldlog.providers.http.openai_compat import OpenAICompatible
from tests.agent.agent_helpers import of_type, reply
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import LoopbackServer, sse

USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}


# --- max_steps bounds every step -------------------------------------------------------------


def _always_steering(agent: Agent) -> list[str]:
    answers: list[str] = []

    @agent.hooks.turn_stopping
    def more(ctx: Any) -> None:
        answers.append(ctx.answer)
        ctx.agent.steer("keep going")

    return answers


def test_max_steps_bounds_steps_that_a_turn_stopping_hook_continues() -> None:
    """The issue's case: a steering listener ran 40 requests in one turn under ``max_steps=5``."""
    provider = Scripted([reply(f"answer {i}") for i in range(40)])
    session = Session()
    agent = Agent(provider, [], session, Options(max_steps=5))
    answers = _always_steering(agent)
    with pytest.raises(MaxStepsExceeded):
        agent.run_sync("go")
    assert len(provider.requests) == 6  # five steps and the grace step
    assert len(answers) == 6
    assert [e["data"].get("source") for e in of_type(session, "user/message")][-1] == "grace"
    end = of_type(session, "turn/end")[-1]["data"]["reason"]
    assert end == {"kind": "max-steps", "steps": 6}
    assert len(of_type(session, "turn/start")) == 1


def test_max_steps_without_the_grace_step_is_exact() -> None:
    provider = Scripted([reply(f"answer {i}") for i in range(40)])
    agent = Agent(provider, [], Session(), Options(max_steps=3, grace_step=False))
    _always_steering(agent)
    with pytest.raises(MaxStepsExceeded):
        agent.run_sync("go")
    assert len(provider.requests) == 3


def test_steering_within_the_limit_still_continues_the_turn() -> None:
    provider = Scripted([reply("draft"), reply("final")])
    agent = Agent(provider, [], Session(), Options(max_steps=2))
    seen: list[str] = []

    @agent.hooks.turn_stopping
    def review(ctx: Any) -> None:
        seen.append(ctx.answer)
        if ctx.answer == "draft":
            ctx.agent.steer("polish it")

    assert agent.run_sync("write") == "final"
    assert seen == ["draft", "final"] and len(provider.requests) == 2


# --- stream text: surrogate pairs split across chunks -----------------------------------------


def _run_stream(payloads: list[bytes], prompts: list[str], session: Session) -> list[str]:
    """Run ``prompts`` in turn against a loopback OpenAI-compatible server streaming ``payloads``
    (one per request, three bytes per write)."""

    async def go() -> list[str]:
        async with LoopbackServer([sse(p, piece=3) for p in payloads]) as srv:
            provider = OpenAICompatible(srv.base_url, "k", "gpt-4o-mini", max_retries=0)
            try:
                agent = Agent(provider, [], session)
                return [await agent.run(p) for p in prompts]
            finally:
                await provider.aclose()

    return asyncio.run(go())


def _text_stream(*pieces: str) -> bytes:
    # json.dumps writes a lone surrogate as its \uXXXX escape: what a server sends when its JSON
    # encoder split a pair between two chunks
    return sse_lines([chunk_obj({"content": p}) for p in pieces] + [chunk_obj({}, "stop", USAGE)])


def test_an_emoji_split_across_two_stream_chunks_is_one_character(tmp_path: Path) -> None:
    first = _text_stream("I feel ", "\ud83d", "\ude00", " today")
    assert b"\\ud83d" in first and b"\\ude00" in first  # two escapes, in two events
    path = tmp_path / "s.jsonl"
    with Session.open(path) as session:
        answers = _run_stream([first, _text_stream("again ", "\ud83d\ude00")], ["hi", "and?"], session)
    assert answers == ["I feel \U0001f600 today", "again \U0001f600"]
    events = Session.load(path).events
    replies = [e["data"] for e in events if e["type"] == "assistant/message"]
    assert [r["message"]["content"] for r in replies] == answers
    assert all(r["usage"]["promptTokens"] == 12 for r in replies)  # the usage is logged too
    assert [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"] == ["completed"] * 2


def test_a_lone_surrogate_in_a_stream_becomes_a_replacement_character() -> None:
    session = Session()
    [answer] = _run_stream([_text_stream("x", "\ud83d", "y", "\ude00")], ["hi"], session)
    assert answer == "x\ufffdy\ufffd"
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"


def test_a_stream_that_ends_on_half_a_pair_keeps_the_text() -> None:
    session = Session()
    [answer] = _run_stream([_text_stream("cut ", "\ud83d")], ["hi"], session)
    assert answer == "cut \ufffd"


# --- any failure while recording a reply closes the turn -------------------------------------


def test_a_reply_the_log_refuses_ends_the_turn_with_error_and_the_next_run_starts_clean() -> None:
    """Fault injection: the session refuses every reply whose text holds "poison" (as it refused a
    lone surrogate). The turn must still end (``error``), and the next run opens a new turn."""
    session = Session()
    append = session.append_event

    def refusing(type_: str, data: Mapping[str, Any], **kw: Any) -> int:
        if type_ == "assistant/message" and "poison" in json.dumps(data):
            raise InvalidEventError("refused by the test: the reply cannot be logged")
        return append(type_, data, **kw)

    session.append_event = refusing  # type: ignore[method-assign,assignment]
    agent = Agent(Scripted([reply("poison"), reply("fine")]), [], session)
    with pytest.raises(InvalidEventError):
        agent.run_sync("first")
    ends = [e["data"] for e in of_type(session, "turn/end")]
    assert ends[-1]["reason"]["kind"] == "error" and "refused by the test" in ends[-1]["reason"]["message"]
    assert agent.run_sync("second") == "fine"
    kinds = [
        e["type"] for e in session.events if e["type"] in ("turn/start", "turn/end", "step/start", "step/end")
    ]
    assert kinds == ["turn/start", "step/start", "step/end", "turn/end"] * 2
