"""Converters against the real corpus: every message, call and result counted against the source."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from foldlog.interchange import TranscriptError, convert
from foldlog.log.text import display_text
from tests.cli.cli_testlib import OPENHANDS_FILES, check_well_formed, claude_files, codex_files

# --- Claude Code ---------------------------------------------------------------------------


def claude_source_counts(path: Path) -> dict[str, int]:
    ids: set[str] = set()
    counts = Counter[str]()
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("type") == "assistant":
            ids.add(rec["message"]["id"])
            counts["tool_calls"] += sum(1 for b in rec["message"]["content"] if b.get("type") == "tool_use")
        elif rec.get("type") == "user":
            content = rec["message"]["content"]
            results = (
                [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
            )
            counts["tool_results"] += len(results)
            if not isinstance(content, list) or len(results) < len(content):
                counts["user"] += 1
        elif rec.get("subtype") == "compact_boundary":
            counts["compactions"] += 1
    counts["assistant"] = len(ids)
    return dict(counts)


def test_claude_code_counts_match_source(corpus: Path) -> None:
    files = claude_files(corpus)
    assert len(files) >= 30
    total_calls = 0
    for path in files:
        (conv,) = convert("claude-code", path)
        src = claude_source_counts(path)
        got = conv.counts
        assert got.messages["assistant"] == src["assistant"], path
        assert got.messages["user"] == src.get("user", 0), path
        assert got.tool_calls == src.get("tool_calls", 0), path
        assert got.tool_results == src.get("tool_results", 0), path
        assert got.compactions == src.get("compactions", 0), path
        check_well_formed(conv.events)
        total_calls += got.tool_calls
    assert total_calls > 1000


def test_claude_code_split_reply_is_one_message_with_results_after(corpus: Path) -> None:
    # in this session one API reply spans several lines with results between them
    path = corpus / "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    (conv,) = convert("claude-code", path)
    multi = [
        ev
        for ev in conv.events
        if ev.type == "assistant/message" and len(ev.data["message"].get("tool_calls", [])) > 1
    ]
    assert multi, "expected replies with parallel tool calls"
    seq = conv.events.index(multi[0])
    ids = [c["id"] for c in multi[0].data["message"]["tool_calls"]]
    following = [ev for ev in conv.events[seq + 1 :] if ev.type == "tool/result"][: len(ids)]
    assert sorted(ev.data["message"]["toolCallId"] for ev in following) == sorted(ids)
    usage = multi[0].data["usage"]
    assert usage["promptTokens"] == usage["cacheHitTokens"] + usage["cacheMissTokens"] > 0


def test_claude_code_compaction_becomes_fold(corpus: Path) -> None:
    path = corpus / "claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    (conv,) = convert("claude-code", path)
    types = [ev.type for ev in conv.events]
    i = types.index("compaction/start")
    assert types[i : i + 4] == ["compaction/start", "compaction/summary", "user/message", "compaction/end"]
    digest = conv.events[i + 2]
    assert isinstance(digest.surface_op, dict)
    assert digest.surface_op["op"] == "fold" and digest.surface_op["keep"] == []
    assert display_text(digest.data["content"]).startswith("This session is being continued")
    summary = conv.events[i + 1].data
    assert summary["folded"] == digest.source_event_seqs and summary["tokensBefore"] == 167094


# --- Codex ---------------------------------------------------------------------------------


def test_codex_counts_match_source(corpus: Path) -> None:
    files = codex_files(corpus)
    assert len(files) == 8
    for path in files:
        (conv,) = convert("codex", path)
        src = Counter[str]()
        assistant_texts: list[str] = []
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            p = rec["payload"]
            if rec["type"] == "session_meta" and p.get("base_instructions"):
                src["system"] += 1
            if rec["type"] == "compacted":
                src["compactions"] += 1
            if rec["type"] != "response_item":
                continue
            kind = p["type"]
            if kind in ("function_call", "custom_tool_call"):
                src["tool_calls"] += 1
            elif kind in ("function_call_output", "custom_tool_call_output"):
                src["tool_results"] += 1
            elif kind == "message":
                role = {"developer": "system"}.get(p["role"], p["role"])
                if role == "assistant":
                    assistant_texts.append(display_text(p["content"]))
                else:
                    src[role] += 1
        got = conv.counts
        assert got.tool_calls == src["tool_calls"], path
        assert got.tool_results == src["tool_results"], path
        assert got.messages["system"] == src["system"], path
        assert got.messages["user"] == src["user"] + src["compactions"], path  # digests are user messages
        assert got.compactions == src["compactions"]
        replies = " ".join(
            ev.data["message"]["content"] for ev in conv.events if ev.type == "assistant/message"
        )
        assert all(t in replies for t in assistant_texts), path
        check_well_formed(conv.events)


def test_codex_usage_comes_from_token_count(corpus: Path) -> None:
    path = corpus / "codemie-code/src/agents/plugins/codex/__tests__/fixtures"
    (conv,) = convert("codex", next(iter(sorted(path.glob("*.jsonl")))))
    usages = [ev.data.get("usage") for ev in conv.events if ev.type == "assistant/message"]
    with_usage = [u for u in usages if u]
    assert len(with_usage) >= len(usages) - 1  # every model call reported its tokens
    assert all(u["promptTokens"] >= u["cacheHitTokens"] for u in with_usage)


# --- OpenAI messages (tau-bench) -----------------------------------------------------------


def test_tau_bench_every_trajectory(corpus: Path) -> None:
    path = corpus / "tau-bench/gpt-4o-airline.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    convs = convert("openai", path)
    assert len(convs) == len(doc) == 200
    total_msgs = total_calls = 0
    for conv, rec in zip(convs, doc, strict=True):
        roles = Counter(m["role"] for m in rec["traj"])
        calls = sum(len(m.get("tool_calls") or []) for m in rec["traj"])
        assert dict(conv.counts.messages) == {r: n for r, n in roles.items() if r != "tool"}
        assert conv.counts.tool_results == roles["tool"]
        assert conv.counts.tool_calls == calls
        total_msgs += sum(roles.values())
        total_calls += calls
        check_well_formed(conv.events)
    assert (total_msgs, total_calls) == (5308, 1164)
    assert len({c.id for c in convs}) == 200


# --- SWE-agent -----------------------------------------------------------------------------


def test_swe_agent_counts_match_source(corpus: Path) -> None:
    files = sorted((corpus / "swe-agent").rglob("*.traj"))
    assert len(files) == 22
    function_calling = 0
    for path in files:
        history = json.loads(path.read_text(encoding="utf-8"))["history"]
        (conv,) = convert("swe-agent", path)
        roles = Counter(m["role"] for m in history)
        calls = 0
        for m in history:
            tc = m.get("tool_calls")
            if isinstance(tc, str):
                import ast

                tc = ast.literal_eval(tc)
            calls += len(tc or [])
        assert conv.counts.messages["assistant"] == roles["assistant"], path
        assert conv.counts.messages["user"] == roles["user"], path
        assert conv.counts.tool_calls == calls, path
        assert conv.counts.tool_results == roles["tool"], path
        check_well_formed(conv.events)
        function_calling += calls > 0
        assert conv.counts.turns == 1  # observations stay inside the one task turn
    assert function_calling >= 5


# --- OpenHands -----------------------------------------------------------------------------


def openhands_events(path: Path) -> list[list[dict[str, object]]]:
    if path.suffix == ".jsonl":
        return [json.loads(line)["history"] for line in path.read_text(encoding="utf-8").splitlines()]
    return [json.loads(path.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("rel", OPENHANDS_FILES)
def test_openhands_counts_match_source(corpus: Path, rel: str) -> None:
    path = corpus / rel
    convs = convert("openhands", path)
    sources = openhands_events(path)
    assert len(convs) == len(sources)
    for conv, events in zip(convs, sources, strict=True):
        with_meta = [e for e in events if "action" in e and "tool_call_metadata" in e]
        flat_tools = [
            e
            for e in events
            if "action" in e
            and "tool_call_metadata" not in e
            and e["action"] not in ("message", "system", "finish", "recall", "change_agent_state", "null")
        ]
        answered = [e for e in events if "observation" in e and "tool_call_metadata" in e]
        flat_obs = [
            e
            for e in events
            if "observation" in e
            and "tool_call_metadata" not in e
            and e["observation"] not in ("recall", "agent_state_changed", "null")
        ]
        assert conv.counts.tool_calls == len(with_meta) + len(flat_tools), path
        assert conv.counts.tool_results + conv.counts.messages["user"] - sum(
            1 for e in events if e.get("action") == "message" and e.get("source", "user") == "user"
        ) == len(answered) + len(flat_obs)
        users = [e for e in events if e.get("action") == "message" and e.get("source", "user") == "user"]
        assert conv.counts.messages["user"] >= len(users)
        check_well_formed(conv.events)


# --- the seed's version-0 log --------------------------------------------------------------


def test_dsh_seed_example(tmp_path: Path, seed_v0_lines: list[str]) -> None:
    src = tmp_path / "seed.jsonl"
    src.write_text("\n".join(seed_v0_lines) + "\n", encoding="utf-8")
    (conv,) = convert("dsh", src)
    check_well_formed(conv.events)
    assert [ev.type for ev in conv.events] == [
        "turn/start",
        "step/start",
        "user/message",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end",
    ]
    reply = conv.events[3].data
    assert reply["message"]["content"] == "I'll search"
    assert reply["message"]["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "grep example README.md"}'},
        }
    ]
    assert reply["usage"] == {"promptTokens": 12, "completionTokens": 4}
    result = conv.events[5]
    assert result.data["message"]["toolCallId"] == "call_1"  # the seed leaves it off
    assert result.data["message"]["content"] == "example" and result.source_event_seqs == [4]
    assert conv.events[-1].data["reason"] == {"kind": "completed"}


# --- malformed input -----------------------------------------------------------------------


def test_bad_json_line_names_file_and_line(tmp_path: Path) -> None:
    first = {
        "claude-code": '{"type":"user","message":{"role":"user","content":"hi"}}',
        "codex": '{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}',
        "dsh": '{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}',
    }
    for fmt, line in first.items():
        bad = tmp_path / f"broken-{fmt}.jsonl"
        bad.write_text(line + '\n\n{"type": oops}\n')
        with pytest.raises(TranscriptError) as info:
            convert(fmt, bad)
        assert info.value.line == 3 and str(bad) in str(info.value)
        assert "invalid JSON" in str(info.value)


def test_wrong_shape_is_reported(tmp_path: Path) -> None:
    arr = tmp_path / "x.json"
    arr.write_text('{"not": "messages"}')
    with pytest.raises(TranscriptError, match='"messages"'):
        convert("openai", arr)
    with pytest.raises(TranscriptError, match="history"):
        convert("swe-agent", arr)
    line = tmp_path / "y.jsonl"
    line.write_text('{"type":"assistant","message":"nope"}\n')
    with pytest.raises(TranscriptError, match=r"y\.jsonl:1: .*message"):
        convert("claude-code", line)
    with pytest.raises(TranscriptError, match="cannot read"):
        convert("codex", tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="unknown transcript format"):
        convert("no-such-format", line)


@pytest.mark.parametrize(
    ("fmt", "what"),
    [
        ("claude-code", "Claude Code transcripts are JSONL"),
        ("codex", "Codex rollouts are JSONL"),
        ("dsh", "dsh logs are JSONL"),
    ],
)
def test_a_json_document_given_to_a_jsonl_importer_says_jsonl_was_expected(
    tmp_path: Path, fmt: str, what: str
) -> None:
    records = [{"type": "user", "message": {"role": "user", "content": "hi"}}, {"type": "assistant"}]
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(records, indent=2))  # a JSON array, pretty-printed
    one_line = tmp_path / "one-line.json"
    one_line.write_text(json.dumps(records))  # a JSON array on one line
    document = tmp_path / "document.json"
    document.write_text(json.dumps(records[0], indent=2))  # one object, pretty-printed
    for path, shape in ((pretty, "a JSON array"), (one_line, "a JSON array"), (document, "several lines")):
        with pytest.raises(TranscriptError) as info:
            convert(fmt, path)
        message = str(info.value)
        assert shape in message and what in message and "one JSON object per line" in message
        assert "Expecting value" not in message and info.value.line == 1
    # a damaged first line of a real JSONL file is still reported as invalid JSON
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text('{"type": "user", "mess\n{"type": "user"}\n')
    with pytest.raises(TranscriptError, match=r"invalid JSON"):
        convert(fmt, damaged)
