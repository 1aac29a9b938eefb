"""Spans of agent sessions: names and attributes per the GenAI semantic conventions (checked
against the `opentelemetry-semantic-conventions` package), contents only on request, nested
sub-agents, compaction, and the live tree equal to the replayed one."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes

from foldlog import Agent, Options, Session, tool
from foldlog.agent.subagent import task_tool
from foldlog.cost.prices import Price
from foldlog.providers import Scripted
from foldlog.telemetry import export_session, instrument, span_tree, trace_session
from foldlog.telemetry import spans as names
from foldlog.telemetry.tree import render
from tests.agent.agent_helpers import call, reply
from tests.telemetry.otel_helpers import memory_provider, spans


class PricedScripted(Scripted):
    prices: Mapping[str, Price] = {"scripted": Price(input=1.0, output=2.0)}


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def test_attribute_names_are_the_conventions_own() -> None:
    assert names.OPERATION == gen_ai.GEN_AI_OPERATION_NAME
    assert names.PROVIDER == gen_ai.GEN_AI_PROVIDER_NAME
    assert names.REQUEST_MODEL == gen_ai.GEN_AI_REQUEST_MODEL
    assert names.RESPONSE_MODEL == gen_ai.GEN_AI_RESPONSE_MODEL
    assert names.REQUEST_MAX_TOKENS == gen_ai.GEN_AI_REQUEST_MAX_TOKENS
    assert names.REQUEST_TEMPERATURE == gen_ai.GEN_AI_REQUEST_TEMPERATURE
    assert names.RESPONSE_FINISH == gen_ai.GEN_AI_RESPONSE_FINISH_REASONS
    assert names.INPUT_TOKENS == gen_ai.GEN_AI_USAGE_INPUT_TOKENS
    assert names.OUTPUT_TOKENS == gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
    assert names.CACHE_READ_TOKENS == gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
    assert names.CACHE_WRITE_TOKENS == gen_ai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
    assert names.CONVERSATION == gen_ai.GEN_AI_CONVERSATION_ID
    assert names.AGENT_NAME == gen_ai.GEN_AI_AGENT_NAME
    assert names.TOOL_NAME == gen_ai.GEN_AI_TOOL_NAME
    assert names.TOOL_CALL_ID == gen_ai.GEN_AI_TOOL_CALL_ID
    assert names.TOOL_TYPE == gen_ai.GEN_AI_TOOL_TYPE
    assert names.TOOL_ARGUMENTS == gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
    assert names.TOOL_RESULT == gen_ai.GEN_AI_TOOL_CALL_RESULT
    assert names.INPUT_MESSAGES == gen_ai.GEN_AI_INPUT_MESSAGES
    assert names.OUTPUT_MESSAGES == gen_ai.GEN_AI_OUTPUT_MESSAGES
    assert names.ERROR_TYPE == error_attributes.ERROR_TYPE
    ops = gen_ai.GenAiOperationNameValues
    assert {ops.INVOKE_AGENT.value, ops.CHAT.value, ops.EXECUTE_TOOL.value} == {
        "invoke_agent", "chat", "execute_tool",
    }  # fmt: skip


def _delegating_run(session: Session, provider: Any, **kw: Any) -> Agent:
    p = provider or PricedScripted(
        [
            reply("", call("task", {"prompt": "find k"}, "t1")),
            reply("", call("lookup", {"key": "k"}, "c1")),
            reply("the value is value-of-k"),
            reply("done: value-of-k"),
        ]
    )
    return Agent(p, [lookup, task_tool()], session, Options(max_steps=10, max_tokens=64, **kw))


def test_a_run_with_a_sub_agent_makes_the_conventions_spans(tmp_path: Path) -> None:
    provider, exporter = memory_provider()
    session = Session.open(tmp_path / "p.jsonl", system="s")
    agent = _delegating_run(session, None)
    tracing = instrument(agent, provider)
    assert agent.run_sync("what is k?") == "done: value-of-k"
    tracing.close()
    (root,) = span_tree(spans(exporter))
    assert root.name == "invoke_agent"
    attrs = dict(root.attributes)
    assert attrs[gen_ai.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attrs[gen_ai.GEN_AI_CONVERSATION_ID] == session.id
    assert attrs[names.END_REASON] == "completed" and error_attributes.ERROR_TYPE not in attrs
    assert [c.name for c in root.children] == ["chat scripted", "execute_tool task", "chat scripted"]
    chat = dict(root.children[0].attributes)
    assert chat[gen_ai.GEN_AI_OPERATION_NAME] == "chat"
    assert chat[gen_ai.GEN_AI_REQUEST_MODEL] == "scripted"
    assert chat[gen_ai.GEN_AI_REQUEST_MAX_TOKENS] == 64
    assert chat[gen_ai.GEN_AI_USAGE_INPUT_TOKENS] == 100 and chat[gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS] == 10
    assert chat[gen_ai.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert chat[names.COST] == pytest.approx(120e-6) and chat[names.COST_CURRENCY] == "USD"
    assert gen_ai.GEN_AI_INPUT_MESSAGES not in chat and gen_ai.GEN_AI_OUTPUT_MESSAGES not in chat
    task = root.children[1]
    tattrs = dict(task.attributes)
    assert tattrs[gen_ai.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert tattrs[gen_ai.GEN_AI_TOOL_NAME] == "task" and tattrs[gen_ai.GEN_AI_TOOL_CALL_ID] == "t1"
    assert gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS not in tattrs
    # the sub-agent's turn nests under the call that ran it, in its own conversation
    (child,) = task.children
    cattrs = dict(child.attributes)
    assert child.name == "invoke_agent" and cattrs[gen_ai.GEN_AI_CONVERSATION_ID] != session.id
    assert cattrs[names.PARENT_SESSION] == session.id
    assert [c.name for c in child.children] == ["chat scripted", "execute_tool lookup", "chat scripted"]
    assert task.start <= child.start and child.end <= task.end
    session.close()


def test_contents_only_when_asked(session: Session) -> None:
    provider, exporter = memory_provider()
    p = Scripted([reply("", call("lookup", {"key": "k"}, "c1")), reply("the answer")])
    agent = Agent(p, [lookup], session)
    tracing = instrument(agent, provider, capture_content=True)
    agent.run_sync("what is k?")
    tracing.close()
    (root,) = span_tree(spans(exporter))
    chat, tool_span, last = root.children
    cattrs = dict(chat.attributes)
    assert json.loads(cattrs[gen_ai.GEN_AI_INPUT_MESSAGES])[0]["content"] == "what is k?"
    assert json.loads(cattrs[gen_ai.GEN_AI_OUTPUT_MESSAGES])[0]["tool_calls"][0]["id"] == "c1"
    tattrs = dict(tool_span.attributes)
    assert json.loads(tattrs[gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"key": "k"}
    assert json.loads(tattrs[gen_ai.GEN_AI_TOOL_CALL_RESULT]) == "value-of-k"
    assert json.loads(dict(last.attributes)[gen_ai.GEN_AI_OUTPUT_MESSAGES])[0]["content"] == "the answer"


def test_errors_and_end_reasons_set_error_type(session: Session) -> None:
    provider, exporter = memory_provider()

    @tool
    def broken() -> str:
        """Fails."""
        raise RuntimeError("nope")

    p = Scripted([reply("", call("broken", {}, "b1")), reply("", call("broken", {}, "b2"))])
    agent = Agent(p, [broken], session, Options(max_steps=1, grace_step=False))
    tracing = instrument(agent, provider)
    with pytest.raises(Exception, match="step"):
        agent.run_sync("go")
    tracing.close()
    (root,) = span_tree(spans(exporter))
    attrs = dict(root.attributes)
    assert attrs[names.END_REASON] == "max-steps" and attrs[error_attributes.ERROR_TYPE] == "max-steps"
    assert root.status == "ERROR"
    tool_span = next(c for c in root.children if c.name == "execute_tool broken")
    assert dict(tool_span.attributes)[error_attributes.ERROR_TYPE] == "tool_error"


def _live_and_replayed(tmp_path: Path, run: Any, *, compact: bool = False) -> tuple[Any, Any]:
    live_provider, live = memory_provider()
    session = Session.open(tmp_path / "live.jsonl", system="s")
    agent = run(session)
    tracing = instrument(agent, live_provider)
    agent.run_sync("what is k?")
    if compact:
        asyncio.run(agent.compact("keep the keys"))
    tracing.close()
    session.close()
    replay_provider, replayed = memory_provider()
    children = export_session(tmp_path / "live.jsonl", replay_provider)
    return (span_tree(spans(live)), span_tree(spans(replayed))), children


def test_live_and_replayed_trees_are_equal_with_a_sub_agent(tmp_path: Path) -> None:
    (live, replayed), children = _live_and_replayed(tmp_path, lambda s: _delegating_run(s, None))
    assert children == 1
    assert live == replayed and len(live) == 1 and live[0].children[1].children


def test_live_and_replayed_trees_are_equal_with_compaction_and_chunks(tmp_path: Path) -> None:
    def run(session: Session) -> Agent:
        replies = [reply("", call("lookup", {"key": str(i)}, f"c{i}")) for i in range(3)] + [reply("done")]
        p = Scripted(replies + [reply("summary of the work")] * 3)
        # small enough to leave something to fold
        options = Options(
            record_chunks=True, max_steps=10, tail_tokens=1, min_recent_keep=1, min_fold_tokens=1
        )
        return Agent(p, [lookup], session, options)

    (live, replayed), _ = _live_and_replayed(tmp_path, run, compact=True)
    assert live == replayed
    turn, compaction = live  # a manual compaction, after the turn: a root of its own
    assert turn.name == "invoke_agent" and compaction.name == "compaction"
    assert dict(compaction.attributes)[names.COMPACTION_TRIGGER] == "manual"


@pytest.mark.parametrize(
    ("fmt", "parts"),
    [
        ("claude-code", ("claude-code-spotter", "tool_heavy.jsonl")),
        ("claude-code", ("claude-code-spotter", "258c7280-ae70-4798-800f-63464d01a85d.jsonl")),
        (
            "codex",
            ("codex-localpush", "rollout-2026-02-23T12-41-04-019c8a4d-8f45-7010-8b5d-7fad920aa6f9.jsonl"),
        ),
        ("openhands", ("openhands", "tests", "runtime", "trajs", "basic_interactions.json")),
    ],
)
def test_imported_corpus_sessions_trace_the_same_live_and_replayed(
    fmt: str, parts: tuple[str, ...], tmp_path: Path
) -> None:
    """The live path (a subscriber while the importer writes) and the replay of the saved log."""
    from foldlog.interchange import convert
    from foldlog.interchange.writer import write_conversation
    from tests.conftest import shared_path

    (conv, *_) = convert(fmt, shared_path("corpus", *parts))
    live_provider, live = memory_provider()
    session = Session(id="imported")
    tracing = trace_session(session, live_provider)
    write_conversation(conv, session)
    tracing.close()
    path = tmp_path / "imported.jsonl"
    session.save(path)
    replay_provider, replayed = memory_provider()
    export_session(path, replay_provider)
    live_tree, replayed_tree = span_tree(spans(live)), span_tree(spans(replayed))
    assert live_tree == replayed_tree
    assert live_tree, "no spans"
    tools = [n for r in live_tree for n in r.children if n.name.startswith("execute_tool ")]
    chats = [n for r in live_tree for n in r.children if n.name.startswith("chat")]
    assert chats and (tools or fmt == "openhands")
    calls = sum(1 for e in session.events if e["type"] == "tool/call")
    assert len(tools) == calls


def test_render_prints_the_tree(tmp_path: Path) -> None:
    (live, _), _ = _live_and_replayed(tmp_path, lambda s: _delegating_run(s, None))
    text = render(live)
    lines = text.splitlines()
    assert lines[0].startswith("invoke_agent ")
    assert lines[1].startswith("  chat scripted ") and "input_tokens=100" in lines[1]
    assert any(line.startswith("    invoke_agent ") for line in lines)  # the sub-agent, nested


def test_one_instrumentation_traces_every_run_of_a_released_session(tmp_path: Path) -> None:
    """The agent releases its session between runs (`release_when_idle`): tracing goes on."""
    live_provider, live = memory_provider()
    session = Session.open(tmp_path / "two.jsonl", system="s")
    agent = Agent(Scripted([reply("one"), reply("two")]), [], session)
    tracing = instrument(agent, live_provider)
    agent.run_sync("first")
    assert session.released
    agent.run_sync("second")
    tracing.close()
    session.close()
    replay_provider, replayed = memory_provider()
    export_session(tmp_path / "two.jsonl", replay_provider)
    tree = span_tree(spans(live))
    assert [dict(r.attributes)[names.TURN] for r in tree] == [1, 2]
    assert tree == span_tree(spans(replayed))
