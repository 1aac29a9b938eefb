"""`foldlog log context` and chat's ``/context``: a request's tokens by category, from the core's
per-message counts and the planner's split, adding up to `Session.token_count` exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog import _core as _native
from foldlog.log.context import CATEGORIES, ContextAtError, breakdown, request_tools
from foldlog.log.grammar import kinds
from tests.cli.cli_testlib import fake_agent_args, run_cli
from tests.support.chat_server import ChatServer
from tests.viewer.viewer_sessions import agent_session, import_transcript

WITH_AGENTS = "claude-code-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"


@pytest.fixture(scope="module")
def agent_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return agent_session(tmp_path_factory.mktemp("agent"))


def context_json(log: Path, home: Path, *flags: str) -> dict[str, Any]:
    result = run_cli("log", "context", str(log), "--json", *flags, home=home)
    assert result.returncode == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def test_the_total_is_the_sessions_token_count(agent_log: Path, tmp_path: Path) -> None:
    got = context_json(agent_log, tmp_path)
    session = Session.load(agent_log)
    tools = request_tools(session)
    assert tools  # the agent's requests carried the tool schemas: they count
    assert got["total"] == int(session.token_count(tools=tools))
    assert sum(got["categories"].values()) == got["total"]
    assert list(got["categories"]) == list(CATEGORIES)
    assert got["exact"] is False  # the image's cost is an estimate
    assert got["tokenizer"] == session.tokenizer().name
    cats = got["categories"]
    assert cats["system"] > 0 and cats["tool schemas"] > 0 and cats["digests"] > 0
    assert cats["images and other estimated"] > 0 and cats["kept"] > 0
    assert got["messages"] == len(session.derive_messages())
    assert sum(got["messages_per_category"].values()) == got["messages"]


def test_the_categories_are_the_sessions_own_counts(agent_log: Path) -> None:
    session = Session.load(agent_log)
    counts = session.token_counts()
    assert counts is not None
    got = breakdown(session, window=10_000)
    seqs = session.surface_seqs()
    system = sum(
        n for s, n in zip(seqs, counts, strict=True) if session.events[s]["type"] == kinds.SYSTEM_MESSAGE
    )
    assert got.categories["system"] == system
    fold = next(e for e in session.events if isinstance(e.get("surfaceOp"), dict))
    assert got.categories["digests"] == counts[seqs.index(fold["seq"])]
    assert got.window == 10_000 and got.trigger == 8_000
    assert "|" in got.bar() and "compaction at 8,000" in got.bar()


def test_at_a_seq_the_request_made_before_it(agent_log: Path, tmp_path: Path) -> None:
    session = Session.load(agent_log)
    replies = [e["seq"] for e in session.events if e["type"] == kinds.ASSISTANT_MESSAGE]
    totals = []
    for seq in replies:
        got = breakdown(session, at_seq=seq, tools=request_tools(session, seq))
        prefix, _ = _native.Log.parse(session._core.event_lines(0, seq), "<prefix>")
        assert got.at_seq == seq and got.messages == prefix.derived_len()
        assert sum(got.categories.values()) == got.total
        totals.append(got.total)
    assert totals[0] < totals[-2]  # the history grew until the fold
    assert context_json(agent_log, tmp_path, "--at", str(replies[-1]))["total"] == totals[-1]
    with pytest.raises(ContextAtError, match="no event #9999"):
        breakdown(session, at_seq=9999)


def test_the_text_shows_the_window_and_the_trigger(agent_log: Path, tmp_path: Path) -> None:
    result = run_cli("log", "context", str(agent_log), "--context-window", "20000", home=tmp_path)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "tool schemas" in out and "digests" in out and "of 20,000" in out
    assert "compaction at 16,000" in out and "|" in out


def test_an_imported_transcript_adds_up(corpus: Path, tmp_path: Path) -> None:
    log = import_transcript(corpus / WITH_AGENTS, tmp_path / "logs", tmp_path / "home")
    got = context_json(log, tmp_path / "home")
    session = Session.load(log)
    assert got["total"] == int(session.token_count()) and sum(got["categories"].values()) == got["total"]
    assert got["window"] == 200_000  # a Claude model's window
    assert got["categories"]["digests"] > 0  # the transcript's compaction


def test_chat_context_prints_the_breakdown(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    server = ChatServer([{"content": "hello there"}]).start()
    try:
        proc = run_cli(
            "chat",
            *fake_agent_args(server, ws),
            "--context-window",
            "32000",
            home=tmp_path,
            input="hi\n/context\n/quit\n",
        )
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "context of" in out and "(the next request)" in out, out
    assert "system" in out and "tail" in out and "of 32,000" in out and "compaction at" in out, out
