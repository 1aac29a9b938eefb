"""Exports against the real corpus: every transcript foldlog imports is exported to Claude Code
and Codex and imported back with foldlog's own importers, to the same derived messages and
counts; every one exports to ATIF that passes the closed schema check."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session, thaw
from foldlog.errors import ExportError
from foldlog.interchange import Conversation, convert, export, write_conversation
from foldlog.interchange.exports.atif_schema import atif_errors, check_atif
from tests.cli.cli_testlib import corpus_transcripts


def _session(conv: Conversation) -> Session:
    s = Session(id=conv.id if conv.id and "/" not in conv.id else "imported")
    write_conversation(conv, s)
    return s


def _arguments(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"arguments": text}


def _image(block: Any) -> Any:
    """An image block as the image it carries: each format writes images in its own block form
    (Claude Code: Anthropic ``image``; Codex: ``input_image``, read back as ``image_url``)."""
    if not isinstance(block, dict):
        return block
    if block.get("type") == "image":
        source = block.get("source") or {}
        if source.get("type") == "base64":
            return {"image": f"data:{source.get('media_type')};base64,{source.get('data')}"}
        return {"image": source.get("url")}
    if block.get("type") == "image_url":
        url = block.get("image_url")
        return {"image": url.get("url") if isinstance(url, dict) else url}
    return block


def comparable(messages: Sequence[Mapping[str, Any]], target: str) -> list[Any]:
    """Derived messages with what ``target`` documents it cannot carry taken out: Claude Code
    holds no system messages and keeps tool-call arguments as an object (their text formatting
    is lost, the JSON value is not); images are compared by the image, not the block form."""
    out: list[Any] = []
    for m in thaw(list(messages)):
        if isinstance(m.get("content"), list):
            m["content"] = [_image(b) for b in m["content"]]
        if target == "claude-code":
            if m["role"] == "system":
                continue
            for call in m.get("tool_calls") or []:
                call["function"]["arguments"] = _arguments(call["function"]["arguments"])
        if target == "codex" and m.get("role") == "tool":
            m.pop("is_error", None)  # Codex has no error flag on tool results
        if target == "codex" and out and _plain_reply(m) and _plain_reply(out[-1]):
            # Codex marks where a reply ends only by its usage report: two replies in a row with no
            # usage between them read back as one (docs/interchange.md, Codex); derived messages do
            # not carry the usage, so every such pair is compared merged
            out[-1]["content"] = f"{out[-1]['content']}\n\n{m['content']}"
            continue
        out.append(m)
    return out


def _plain_reply(m: Mapping[str, Any]) -> bool:
    return m.get("role") == "assistant" and not m.get("tool_calls") and isinstance(m.get("content"), str)


def _counts(conv: Conversation, target: str) -> dict[str, Any]:
    c = conv.counts.as_dict()
    if target == "claude-code":
        c["messages"].pop("system", None)
    return {k: c[k] for k in ("messages", "tool_calls", "tool_results", "compactions")}


#: the round trips measured (filled by the test; the report prints the totals)
MEASURED: dict[tuple[str, str], Counter[str]] = {}


@pytest.mark.parametrize("target", ["claude-code", "codex"])
def test_every_corpus_transcript_round_trips(target: str, corpus: Path, tmp_path: Path) -> None:
    jobs = corpus_transcripts(corpus)
    assert len(jobs) >= 70
    out = tmp_path / "exported.jsonl"
    for fmt, path in jobs:
        for index, conv in enumerate(convert(fmt, path)):
            where = f"{path}#{index} ({fmt} -> {target})"
            session = _session(conv)
            export(session, target).write(out)
            (back,) = convert(target, out)
            again = _session(back)
            assert comparable(again.derive_messages(), target) == comparable(
                session.derive_messages(), target
            ), where
            got, expected = _counts(back, target), _counts(conv, target)
            if target == "codex":  # replies in a row: compared merged, by the messages above
                got["messages"].pop("assistant", None)
                expected["messages"].pop("assistant", None)
            assert got == expected, where
            if fmt == target:  # the same format: the turns and steps too
                assert (back.counts.turns, back.counts.steps) == (conv.counts.turns, conv.counts.steps), where
            tally = MEASURED.setdefault((fmt, target), Counter())
            tally["transcripts"] += 1
            tally["messages"] += len(comparable(session.derive_messages(), target))
            tally["tool_calls"] += back.counts.tool_calls
        MEASURED[(fmt, target)]["files"] += 1
    for (fmt, tgt), tally in sorted(MEASURED.items()):
        if tgt == target:
            print(f"round trip {fmt} -> {tgt}: {dict(tally)}")
    assert sum(t["files"] for (_, tgt), t in MEASURED.items() if tgt == target) == len(jobs)


def test_every_corpus_transcript_exports_to_valid_atif(corpus: Path) -> None:
    steps = 0
    for fmt, path in corpus_transcripts(corpus):
        for conv in convert(fmt, path):
            doc = json.loads(export(_session(conv), "atif").text)
            assert atif_errors(doc) == [], path
            agent = [s for s in doc["steps"] if s["source"] == "agent"]
            assert len(agent) == conv.counts.messages["assistant"], path
            assert sum(len(s.get("tool_calls", [])) for s in agent) == conv.counts.tool_calls, path
            paired = sum(
                1
                for s in doc["steps"]
                for r in s.get("observation", {}).get("results", [])
                if "source_call_id" in r
            )
            assert paired <= conv.counts.tool_results
            steps += len(doc["steps"])
    assert steps > 5000


def test_the_atif_schema_check_accepts_the_corpus_examples_and_names_each_problem(corpus: Path) -> None:
    examples = sorted((corpus / "atif").rglob("*.json"))
    assert len(examples) == 4
    for path in examples:
        assert atif_errors(json.loads(path.read_text(encoding="utf-8"))) == [], path
    good = json.loads((corpus / "atif/fast-agent/harbor_multiagent_v1_7.json").read_text(encoding="utf-8"))

    def broken(change: Any) -> list[str]:
        doc = json.loads(json.dumps(good))
        change(doc)
        return atif_errors(doc)

    assert any("unknown field 'model'" in e for e in broken(lambda d: d["agent"].update(model="x")))
    assert any("must be 2" in e for e in broken(lambda d: d["steps"][1].update(step_id=5)))
    assert any(
        "not a tool_call_id of this step" in e
        for e in broken(lambda d: d["steps"][1]["observation"]["results"][0].update(source_call_id="nope"))
    )
    assert any(
        "only on agent steps" in e for e in broken(lambda d: d["steps"][0].update(reasoning_content="x"))
    )
    assert any("not ISO 8601" in e for e in broken(lambda d: d["steps"][0].update(timestamp="yesterday")))
    assert any("needs at least one step" in e for e in broken(lambda d: d.update(steps=[])))
    assert any(
        "'trajectory_id'" in e for e in broken(lambda d: d["subagent_trajectories"][0].pop("trajectory_id"))
    )
    assert any("ATIF-v1.0..ATIF-v1.7" in e for e in broken(lambda d: d.update(schema_version="1.4")))
    with pytest.raises(ExportError, match="not a valid ATIF document"):
        check_atif({"steps": []})


def test_atif_of_a_session_with_a_subagent_embeds_it() -> None:
    parent = Session(system="sys", id="parent")
    parent.add({"role": "user", "content": "delegate it"})
    parent.append_event(
        "assistant/message",
        {
            "turn": 0,
            "step": 0,
            "message": {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "task", "arguments": "{}"}}
                ],
            },
            "usage": {"promptTokens": 10, "completionTokens": 2, "cacheHitTokens": 4},
        },
        surface_op="append",
    )
    parent.add({"role": "tool", "tool_call_id": "c1", "content": "child says hi"})
    child = Session(id="child", parent={"kind": "subagent", "id": "parent", "callId": "c1"})
    child.add({"role": "user", "content": "do the part"})
    child.add({"role": "assistant", "content": "hi"})
    doc = json.loads(export(parent, "atif", children=[child]).text)
    assert atif_errors(doc) == []
    result = doc["steps"][2]["observation"]["results"][0]
    assert result["source_call_id"] == "c1" and result["subagent_trajectory_ref"] == [
        {"trajectory_id": "child"}
    ]
    assert [t["trajectory_id"] for t in doc["subagent_trajectories"]] == ["child"]
    assert doc["steps"][2]["metrics"] == {"prompt_tokens": 10, "completion_tokens": 2, "cached_tokens": 4}
    with pytest.raises(ExportError, match="no messages"):
        export(Session(), "atif")
    with pytest.raises(ExportError, match="unknown export format 'yaml'"):
        export(parent, "yaml")


def test_surface_rewrites_the_formats_cannot_say_are_named_in_the_warnings() -> None:
    s = Session(system="sys", id="rewrites")
    s.add({"role": "user", "content": "q"})
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    s.add({"role": "assistant", "content": "", "tool_calls": [call]})
    result = s.add({"role": "tool", "tool_call_id": "c1", "content": "a long output"})
    s.append_event(
        "tool/result",
        {
            "turn": 0,
            "step": 0,
            "message": {"role": "tool", "toolCallId": "c1", "content": "[elided]", "isError": False},
        },
        surface_op={"op": "replace", "start": result, "end": result},
        source_event_seqs=[result],
    )
    codex = export(s, "codex")
    assert any("1 pruned copy(ies) of tool results left out" in w for w in codex.warnings)
    assert "a long output" in codex.text and "[elided]" not in codex.text
    s.replace([{"role": "user", "content": "start over"}])
    assert any("surface reset" in w for w in export(s, "codex").warnings)
    claude = export(s, "claude-code")  # Claude Code starts the context over at a new root
    assert not any("surface reset" in w for w in claude.warnings)
    assert claude.text.count('"type": "user"') == 3  # q, the original result, start over
    restart = json.loads(claude.text.splitlines()[-1])
    assert restart["message"]["content"] == "start over" and restart["parentUuid"] is None
    assert "logicalParentUuid" not in restart
