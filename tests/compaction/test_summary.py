"""The summariser's input: transcript format (argument keys only), capping, digest text."""

from __future__ import annotations

import asyncio
from typing import Any

from foldlog.compaction import planning
from foldlog.compaction.summary import (
    FOCUS_LINE,
    cap_transcript,
    digest_content,
    summarize,
    summary_request,
    transcript_entries,
)
from foldlog.providers import Scripted


def test_transcript_has_argument_keys_only_and_no_reasoning() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": "deploy to prod-eu-3"},
        {
            "role": "assistant",
            "content": "Reading the config.",
            "reasoning_content": "SECRET CHAIN OF THOUGHT",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {
                        "name": "read_file",
                        "arguments": '{"path": "/etc/secret.conf", "lines": 10}',
                    },
                },
                {"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "port=8443"},
        {"role": "tool", "tool_call_id": "c2", "name": "bash", "content": "ok"},
    ]
    assert transcript_entries(msgs) == [
        "[user] deploy to prod-eu-3",
        "[assistant] Reading the config.",
        "[assistant calls read_file] {path, lines} (2 keys)",
        "[assistant calls bash] {} (0 keys)",
        "[tool read_file result] port=8443",
        "[tool bash result] ok",
    ]
    req = summary_request(msgs, focus="the port", max_chars=10_000, model=None)
    text = req.messages[1]["content"]
    assert "/etc/secret.conf" not in text and "SECRET" not in text
    assert text.endswith(f"{FOCUS_LINE}\nthe port")
    assert req.tools == () and req.params == {} and req.max_tokens is None


def test_cap_transcript_cuts_long_entries_first_then_the_middle() -> None:
    entries = (
        ["[user] goal: ship it"]
        + [f"[tool t result] {i} " + "x" * 5_000 for i in range(10)]
        + ["[user] last"]
    )
    out = cap_transcript(entries, 20_000)
    assert len(out) <= 20_000
    assert out.startswith("[user] goal: ship it\n") and out.endswith("\n[user] last")
    assert out.count("chars cut…]") == 10  # every long entry shortened, all kept
    tiny = cap_transcript(entries, 1_500)
    assert len(tiny) <= 1_500
    assert "entries omitted to fit the summariser's window" in tiny
    assert tiny.startswith("[user] goal") and tiny.endswith("[user] last")
    assert cap_transcript(["a", "b"], 10) == "a\nb"


def test_digest_and_mechanical_text() -> None:
    d = digest_content("## Goal\n- x\n")
    assert d.splitlines()[0] == "<compaction-summary>"
    assert (
        d.splitlines()[1]
        == "Summary of earlier conversation (older messages were compacted to save context):"
    )
    assert d.endswith("- x\n</compaction-summary>")
    assert d.startswith(planning.DIGEST_OPEN)


def test_summarize_reports_usage_and_errors() -> None:
    usages: list[Any] = []
    req = summary_request([{"role": "user", "content": "x"}], focus=None, max_chars=1000, model=None)
    p = Scripted([{"content": " ## Goal ", "usage": {"prompt_tokens": 9, "completion_tokens": 2}}])
    out = asyncio.run(summarize(p, req, timeout=5, on_usage=usages.append))
    assert (out.text, out.attempts, out.error) == ("## Goal", 1, None)
    assert usages[0].prompt_tokens == 9
    bad = Scripted([ValueError("bad"), {"content": ""}])
    out = asyncio.run(summarize(bad, req, timeout=5, on_usage=usages.append))
    assert (out.text, out.attempts, out.error) == ("", 2, "the summariser returned nothing")
