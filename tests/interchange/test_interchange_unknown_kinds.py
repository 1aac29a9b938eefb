"""Formats grow new kinds of records, calls and outputs (issue 26, items 2 and 8): an importer never
drops one silently — it keeps it as the closest thing foldlog has, or names it in ``left_out``
with its count — and a bad value is a clear error naming the file, field and value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldlog.interchange import TranscriptError, convert
from tests.cli.cli_testlib import check_well_formed, gemini_files, run_cli


def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- Claude Code ---------------------------------------------------------------------------


def _claude(uuid: str, parent: str | None, kind: str, content: Any, **message: Any) -> dict[str, Any]:
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": "kinds-1",
        "isSidechain": False,
        "timestamp": "2026-03-01T10:00:00.000Z",
        "message": {"role": kind, "content": content, **message},
    }


def test_claude_code_names_unknown_records_and_blocks_and_keeps_server_results(tmp_path: Path) -> None:
    search = {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "web_search",
        "input": {"query": "rust 2024"},
    }
    found = {
        "type": "web_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.org", "title": "Rust 2024"}],
    }
    src = _jsonl(
        tmp_path / "kinds.jsonl",
        [
            _claude("u1", None, "user", "what is new in rust 2024?"),
            {"type": "worktree-state", "uuid": "w1", "parentUuid": None, "state": {}},  # in no thread
            _claude(
                "a1",
                "u1",
                "assistant",
                [
                    {"type": "redacted_thinking", "data": "EuYBCkQYAiJA"},
                    search,
                    found,
                    {"type": "hologram", "payload": 1},
                    {"type": "text", "text": "Rust 2024 adds async closures."},
                ],
                id="msg_1",
                model="claude-sonnet-4-5",
            ),
        ],
    )
    (conv,) = convert("claude-code", src)
    # the server's result is the result of its call: the call is answered, nothing to repair
    (result,) = [ev for ev in conv.events if ev.type == "tool/result"]
    assert result.data["message"]["toolCallId"] == "srvtoolu_1"
    assert "https://example.org" in result.data["message"]["content"]
    assert sorted(conv.left_out) == [
        "1 'hologram' reply block(s): a kind of block this importer does not know",
        "1 'redacted_thinking' reply block(s): encrypted reasoning, readable only by the provider",
        "1 'worktree-state' record(s): a kind of record this importer does not know",
    ]
    check_well_formed(conv.events)


# --- Codex -----------------------------------------------------------------------------------


def _codex(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-02-23T12:00:00.000Z", "type": kind, "payload": payload}


def test_codex_keeps_new_kinds_of_calls_and_names_unknown_items(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path / "rollout.jsonl",
        [
            _codex("session_meta", {"id": "kinds-2", "cwd": "/w"}),
            _codex(
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "ls"}]},
            ),
            _codex(
                "response_item",
                {
                    "type": "local_shell_call",
                    "call_id": "c1",
                    "status": "completed",
                    "action": {"type": "exec", "command": ["ls"]},
                },
            ),
            _codex("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
            _codex("response_item", {"type": "tool_search_call", "call_id": "c2", "query": "git"}),
            _codex(
                "response_item",
                {"type": "tool_search_call_output", "call_id": "c2", "output": {"tools": ["git_log"]}},
            ),
            _codex("response_item", {"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
            _codex("response_item", {"type": "sparkle", "glow": True}),
            _codex("inner_monologue", {"text": "?"}),
        ],
    )
    (conv,) = convert("codex", src)
    calls = [ev.data for ev in conv.events if ev.type == "tool/call"]
    assert [(c["callId"], c["name"]) for c in calls] == [("c1", "local_shell"), ("c2", "tool_search_call")]
    assert json.loads(calls[1]["arguments"]) == {"query": "git"}
    results = [ev.data["message"] for ev in conv.events if ev.type == "tool/result"]
    assert [(r["toolCallId"], r["content"]) for r in results] == [
        ("c1", "a.txt"),
        ("c2", '{"tools": ["git_log"]}'),
    ]
    assert sorted(conv.left_out) == [
        "1 'inner_monologue' record(s): a kind of record this importer does not know",
        "1 'sparkle' item(s): a kind of response item this importer does not know",
    ]
    check_well_formed(conv.events)


# --- Gemini CLI --------------------------------------------------------------------------------


def _gemini_with(corpus: Path, tmp_path: Path, **tokens: Any) -> Path:
    src = gemini_files(corpus)[-1]
    doc = json.loads(src.read_text(encoding="utf-8"))
    reply = next(m for m in doc["messages"] if m["type"] == "gemini")
    reply["tokens"].update(tokens)
    out = tmp_path / src.name
    out.write_text(json.dumps(doc), encoding="utf-8")
    return out


@pytest.mark.parametrize("value", ["12k", 12.5, -3, True, [1]])
def test_gemini_token_count_that_is_not_a_whole_number_is_a_named_error(
    corpus: Path, tmp_path: Path, value: Any
) -> None:
    src = _gemini_with(corpus, tmp_path, output=value)
    with pytest.raises(TranscriptError) as caught:
        convert("gemini", src)
    message = str(caught.value)
    assert src.name in message and '"tokens.output"' in message and json.dumps(value) in message
    proc = run_cli(
        "log", "import", "--from", "gemini", str(src), "-o", str(tmp_path / "out.jsonl"), home=tmp_path
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and '"tokens.output"' in proc.stderr
    assert not (tmp_path / "out.jsonl").exists()


def test_gemini_integral_float_token_counts_are_taken(corpus: Path, tmp_path: Path) -> None:
    src = _gemini_with(corpus, tmp_path, input=1200.0, output=34.0, cached=None)
    (conv,) = convert("gemini", src)
    usage = next(ev.data["usage"] for ev in conv.events if ev.type == "assistant/message")
    assert usage["promptTokens"] == 1200 and usage["cacheHitTokens"] == 0
    assert all(isinstance(v, int) for v in usage.values())


def test_gemini_names_an_unknown_kind_of_message(corpus: Path, tmp_path: Path) -> None:
    src = gemini_files(corpus)[-1]
    doc = json.loads(src.read_text(encoding="utf-8"))
    doc["messages"].insert(1, {"id": "x", "type": "subagent_report", "content": "done"})
    out = tmp_path / src.name
    out.write_text(json.dumps(doc), encoding="utf-8")
    (conv,) = convert("gemini", out)
    assert conv.left_out == ["1 'subagent_report' message(s): a kind of message this importer does not know"]


# --- OpenAI messages, dsh ------------------------------------------------------------------------


def test_openai_legacy_function_call_and_refusal_are_kept(tmp_path: Path) -> None:
    src = tmp_path / "messages.json"
    src.write_text(
        json.dumps(
            [
                {"role": "user", "content": "weather in Oslo?"},
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                },
                {"role": "function", "name": "weather", "content": "4 C, rain"},
                {"role": "assistant", "content": None, "refusal": "I cannot share that."},
                {"role": "user", "content": "say it then"},
                {"role": "assistant", "content": None, "audio": {"id": "au_1", "transcript": "It rains."}},
            ]
        ),
        encoding="utf-8",
    )
    (conv,) = convert("openai", src)
    assert conv.counts.tool_calls == conv.counts.tool_results == 1
    (call,) = [ev.data for ev in conv.events if ev.type == "tool/call"]
    assert call["name"] == "weather" and json.loads(call["arguments"]) == {"city": "Oslo"}
    replies = [ev.data["message"]["content"] for ev in conv.events if ev.type == "assistant/message"]
    assert replies[-2:] == ["I cannot share that.", "It rains."]
    check_well_formed(conv.events)


def test_dsh_thinking_blocks_become_the_replys_reasoning(tmp_path: Path) -> None:
    src = _jsonl(
        tmp_path / "v0.jsonl",
        [
            {"type": "user/message", "time": 1, "data": {"role": "user", "content": "2+2?"}},
            {
                "type": "assistant/message",
                "time": 2,
                "data": {
                    "message": {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "add them"},
                            {"type": "text", "text": "4"},
                        ],
                    }
                },
            },
        ],
    )
    (conv,) = convert("dsh", src)
    (reply,) = [ev.data["message"] for ev in conv.events if ev.type == "assistant/message"]
    assert reply["content"] == "4" and reply["reasoning_content"] == "add them"
