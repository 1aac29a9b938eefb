"""Request bodies from the core's cached message JSON: byte-identical to the Python encoding on
corpus sessions, through appends, a dangling call, replaces, folds, resets and a reload; and the
incremental token counts equal a full recount."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from foldlog import Session
from foldlog.interchange import convert, write_conversation
from foldlog.log.frozen import thaw
from foldlog.log.tokens import Tokenizer
from foldlog.log.wire import ChunkedBody, frame
from foldlog.providers.base import Request
from foldlog.providers.http.deepseek import DeepSeek
from foldlog.providers.http.openai_compat import OpenAICompatible
from tests.tokens.tokens_corpus import shared_dir

CORPUS = [
    ("claude-code", ("claude-code-spotter", "258c7280-ae70-4798-800f-63464d01a85d.jsonl")),
    ("codex", ("codex-localpush", "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl")),
    ("openai", ("tau-bench", "gpt-4o-airline.json")),
]
TOOLS = [{"name": "bash", "description": "Run ✓ a command", "parameters": {"type": "object"}}]
PROVIDERS = [
    DeepSeek(api_key="sk-test"),  # thinking: reasoning sent back on calls ("with-calls")
    DeepSeek(api_key="sk-test", thinking=False),  # "strip"
    OpenAICompatible(
        "http://127.0.0.1:9/v1",
        model="m",
        max_tokens=64,
        extra_body={"zeta": [1.5, 2e20, "é"], "a": {"y": 1, "b": None}},
    ),
]


def corpus_session(fmt: str, parts: tuple[str, str]) -> Session:
    conversation = convert(fmt, shared_dir().joinpath("corpus", *parts))[0]
    s = Session(id="corpus")
    write_conversation(conversation, s)
    return Session.from_bytes(s._core.to_bytes())  # loaded: repaired as a resumed session is


def python_body(p: OpenAICompatible, s: Session) -> bytes:
    """The body as the provider encoded it before the core's segments."""
    return p.encode_body(p.build_body(Request(messages=s.wire_messages(), tools=TOOLS, temperature=0.2)))


def segment_body(p: OpenAICompatible, s: Session) -> bytes:
    style = p.wire_style()
    assert style is not None
    wire = s.wire_request(style)
    body = p.encode_request(Request(messages=wire.messages, tools=TOOLS, temperature=0.2, wire=wire))
    assert isinstance(body, ChunkedBody)
    data = body.to_bytes()
    assert len(body) == len(data)

    async def streamed() -> bytes:
        return b"".join([piece async for piece in body])

    assert asyncio.run(streamed()) == data  # what httpx sends
    return data


def assert_same(s: Session) -> None:
    for p in PROVIDERS:
        assert segment_body(p, s) == python_body(p, s), f"{type(p).__name__} {p.wire_style()}"
    # the incremental plan equals the send normalizer run over everything
    assert thaw(s.wire_messages()) == s._core.wire_messages()
    assert json.loads(s.wire_json()) == s._core.wire_messages()


def fold_middle(s: Session) -> None:
    """Fold the first half of the surface after the first message into a digest."""
    nodes = s._core.surface_nodes()
    seqs = s.surface_seqs()
    first, last = seqs[1], seqs[len(seqs) // 2]
    removed = nodes[nodes.index(first) : nodes.index(last) + 1]
    s.append_event(
        "user/message",
        {"role": "user", "content": "<compaction-summary>digest</compaction-summary>"},
        surface_op={"op": "fold", "start": first, "end": last, "keep": []},
        source_event_seqs=removed,
    )


@pytest.mark.parametrize(("fmt", "parts"), CORPUS, ids=[c[0] for c in CORPUS])
def test_bodies_are_identical_through_every_surface_change(fmt: str, parts: tuple[str, str]) -> None:
    s = corpus_session(fmt, parts)
    assert_same(s)  # cold: every message serialised
    held = s.wire_request("strip")
    held_body = held.segments.body(b"[", b"]").to_bytes()
    held_messages = list(held.messages)
    assert held.messages == held_messages and held.messages[-1] == held_messages[-1]
    assert held.messages[2:5] == held_messages[2:5] and len(held.messages) == len(held_messages)

    s.add({"role": "user", "content": 'tab\there, quote " and \\ and \u0007 and ünïcode 🚀'})
    s.add(
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "let me look",
            "tool_calls": [
                {"id": "call_x", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        }
    )
    assert_same(s)  # the normalizer fills the missing result: a body of its own
    seq = s.add({"role": "tool", "tool_call_id": "call_x", "name": "bash", "content": "ok"})
    s.add({"role": "assistant", "content": "done", "reasoning_content": "fine"})
    assert_same(s)  # appends: only the new messages serialised
    assert held.segments.body(b"[", b"]").to_bytes() == held_body, "a snapshot never changes"
    assert held.messages == held_messages

    s.append_event(
        "tool/result",
        {
            "turn": 0,
            "step": 0,
            "message": {"role": "tool", "toolCallId": "call_x", "toolName": "bash", "content": "[elided]"},
        },
        surface_op={"op": "replace", "start": seq, "end": seq},
        source_event_seqs=[seq],
    )
    assert_same(s)
    fold_middle(s)
    assert_same(s)
    s.add({"role": "user", "content": "after the fold"})
    assert_same(s)

    reloaded = Session.from_bytes(s._core.to_bytes())
    assert_same(reloaded)
    assert segment_body(PROVIDERS[0], reloaded) == segment_body(PROVIDERS[0], s)

    s.replace([{"role": "system", "content": "fresh"}, {"role": "user", "content": "again"}])
    assert_same(s)
    assert held.segments.body(b"[", b"]").to_bytes() == held_body
    assert held.messages == held_messages


def test_frame_matches_json_dumps() -> None:
    body: dict[str, Any] = {
        "model": "m",
        "messages": [],
        "stream": True,
        "a": [1.0, {"z": 1, "b": "ü\n"}],
        "max_tokens": 5,
        "zz": None,
    }
    head, tail = frame(body)
    want = json.dumps(body, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    assert head + tail == want
    assert frame({"messages": []}) == (b'{"messages":[', b"]}")


def test_providers_that_rewrite_messages_use_the_python_path() -> None:
    # issue 16: a provider that sends messages the core does not write says so with its style
    class Custom(OpenAICompatible):
        def wire_style(self) -> str | None:
            return None

        def build_body(self, request: Request) -> dict[str, Any]:
            body = super().build_body(request)
            body["messages"] = [{**m, "extra": 1} for m in body["messages"]]
            return body

    s = Session(system="hi")
    p = Custom("http://127.0.0.1:9/v1", model="m")
    assert p.wire_style() is None
    wire = s.wire_request("strip")
    want = p.encode_body(p.build_body(Request(messages=s.wire_messages())))
    assert p.encode_request(Request(messages=wire.messages, wire=wire)) == want
    assert b'"extra":1' in want
    # a hook that swaps the messages disables the cached body (it would send the old ones)
    std = OpenAICompatible("http://127.0.0.1:9/v1", model="m")
    swapped = Request(messages=[{"role": "user", "content": "other"}], wire=wire)
    assert isinstance(std.encode_request(swapped), bytes)


@pytest.mark.parametrize("model", ["deepseek-v4-flash", "gpt-4"])
def test_incremental_token_counts_equal_a_full_recount(model: str) -> None:
    s = corpus_session(*CORPUS[0])
    tok = Tokenizer.for_model(model)

    def recount() -> list[int]:
        return [tok.count_message(m) for m in s.derive_messages()]

    assert s.token_counts(model) == recount()
    assert s.token_count(model) == sum(recount()) + tok.request_overhead()
    for i in range(3):
        s.add({"role": "user", "content": f"more {i} ✓"})
        s.add({"role": "assistant", "content": f"answer {i}"})
        assert s.token_count(model) == sum(recount()) + tok.request_overhead()
    fold_middle(s)
    assert s.token_counts(model) == recount()
    assert s.token_count(model, TOOLS) == sum(recount()) + tok.count_tools(TOOLS) + tok.request_overhead()
    assert Session().token_counts("unknown-model") is None


def grow(s: Session, start: int, n: int) -> None:
    """``n`` rounds of talk in which the send plan makes messages of its own: results under
    another name (renamed), results with an image (the attachment moved to a user message), and
    a last call without its result (filled until the next rounds answer it)."""
    image = {"type": "image_url", "image_url": {"url": "https://example.com/i.png"}}
    if start:
        s.add({"role": "tool", "tool_call_id": f"c{start - 1}", "name": "bash", "content": "late"})
        s.add({"role": "assistant", "content": f"answer {start - 1}"})
    for i in range(start, start + n):
        s.add({"role": "user", "content": f"question {i}"})
        call = {"id": f"c{i}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
        s.add({"role": "assistant", "content": "", "tool_calls": [call]})
        if i == start + n - 1:
            return
        name = "shell" if i % 5 == 0 else "bash"
        content: Any = [{"type": "text", "text": f"out {i}"}, image] if i % 11 == 0 else f"out {i}"
        s.add({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": content})
        s.add({"role": "assistant", "content": f"answer {i}"})


def test_requests_of_a_long_session_share_the_plans_final_items() -> None:
    """The entries of the send plan's final items are kept in shared chunks (1,024 a chunk)
    between requests: through thousands of messages, a rewrite and a fold, every request's
    messages equal the normalizer run over everything, and a snapshot taken earlier never
    changes."""
    s = Session("sys", id="long")
    held: list[tuple[Any, list[Any]]] = []
    for k in range(6):
        grow(s, 200 * k, 200)  # ~750 messages a round: the chunks fill at different points
        for style in ("keep", "strip", "with-calls"):
            messages = s.wire_request(style).messages
            assert thaw(list(messages)) == s._core.wire_messages(), (k, style)
        messages = s.wire_request("keep").messages
        held.append((messages, list(messages)))
        if k == 2:  # a new plan: the same messages with other texts, a few less
            again = [
                {**m, "content": m["content"] + " again"} if isinstance(m["content"], str) else m
                for m in thaw(s.derive_messages())[:-5]
            ]
            s.replace(again)
        if k == 4:
            fold_middle(s)
    for messages, listed in held:
        assert list(messages) == listed and len(messages) == len(listed)
    last = s.wire_request("keep").messages
    assert len(last) > 2 * 1024
    assert thaw(list(last[1000:1100])) == s._core.wire_messages()[1000:1100]
