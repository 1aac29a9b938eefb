"""Importers keep images and documents (issue 14, deliverable 2): a Claude Code tool_result image
used to become the text "[image]" without a word. Real corpus where it has images (a Codex
rollout with 14 ``input_image`` items); small synthetic transcripts for the formats whose corpus
files have none. What cannot be carried is named in the import report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cli_testlib import check_well_formed, run_cli

from foldlog.interchange import convert
from foldlog.interchange.writer import write_conversation
from foldlog.session import Session

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
PDF = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"}}


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def claude_transcript(path: Path) -> Path:
    def user(content: Any, **extra: Any) -> dict[str, Any]:
        return {"type": "user", "sessionId": "s1", "message": {"role": "user", "content": content}, **extra}

    def assistant(mid: str, content: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "type": "assistant",
            "sessionId": "s1",
            "message": {"id": mid, "role": "assistant", "model": "claude-x", "content": content},
        }

    return write_jsonl(
        path,
        [
            user([{"type": "text", "text": "What is wrong in this screenshot?"}, IMAGE]),
            assistant(
                "m1", [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.png"}}]
            ),
            user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "a.png (1x1)"}, IMAGE],
                    }
                ]
            ),
            assistant(
                "m2", [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "spec.pdf"}}]
            ),
            user([{"type": "tool_result", "tool_use_id": "t2", "content": [PDF]}]),
            assistant("m3", [{"type": "tool_use", "id": "t3", "name": "ToolSearch", "input": {}}]),
            user(
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t3",
                        "content": [{"type": "tool_reference", "tool_name": "WebFetch"}, IMAGE],
                    }
                ]
            ),
            assistant("m4", [{"type": "text", "text": "The button is misaligned."}]),
        ],
    )


def test_claude_code_keeps_images_and_documents_as_blocks(tmp_path: Path) -> None:
    (conv,) = convert("claude-code", claude_transcript(tmp_path / "cc.jsonl"))
    check_well_formed(conv.events)
    users = [e.data for e in conv.events if e.type == "user/message"]
    results = [e.data["message"] for e in conv.events if e.type == "tool/result"]
    assert users[0]["content"] == [{"type": "text", "text": "What is wrong in this screenshot?"}, IMAGE]
    assert results[0]["content"] == [{"type": "text", "text": "a.png (1x1)"}, IMAGE]
    assert results[1]["content"] == [PDF]
    # a block with no form in the log becomes text that names it, and the report says so
    assert results[2]["content"][0] == {
        "type": "text",
        "text": '[tool_reference block: {"type": "tool_reference", "tool_name": "WebFetch"}]',
    }
    assert results[2]["content"][1] == IMAGE
    assert conv.warnings == ["a 'tool_reference' block was kept as text (the log has no form for it)"]
    assert "[image]" not in json.dumps([e.data for e in conv.events])

    # recorded, reloaded and derived: the blocks are what the model is given
    s = Session(id="cc")
    write_conversation(conv, s)
    again = Session.from_bytes(s._core.to_bytes())
    derived = [m for m in again.derive_messages() if m["role"] == "tool"]
    assert derived[0]["content"][1]["source"]["data"] == PNG
    # and sent the way chat completions take them (the core's mapping)
    wire = again.wire_messages()
    assert wire[0]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    attachments = [
        m for m in wire if m["role"] == "user" and "Attachments of the tool result" in json.dumps(m)
    ]
    assert len(attachments) == 3


def test_the_import_report_names_what_could_not_be_carried(tmp_path: Path) -> None:
    src = claude_transcript(tmp_path / "cc.jsonl")
    proc = run_cli(
        "log", "import", "--from", "claude-code", str(src), "-o", str(tmp_path / "out.jsonl"), home=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "warning: a 'tool_reference' block was kept as text" in proc.stdout
    proc = run_cli(
        "log",
        "import",
        "--from",
        "claude-code",
        str(src),
        "-o",
        str(tmp_path / "o2.jsonl"),
        "--json",
        home=tmp_path,
    )
    assert json.loads(proc.stdout)["warnings"] == [
        "a 'tool_reference' block was kept as text (the log has no form for it)"
    ]


def test_codex_input_images_of_the_real_corpus_are_kept(corpus: Path) -> None:
    path = corpus / "codex-localpush/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"
    source_images: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        p = rec.get("payload") or {}
        if rec.get("type") == "response_item" and p.get("type") == "message" and p.get("role") == "user":
            source_images += [
                b["image_url"] for b in p.get("content") or [] if b.get("type") == "input_image"
            ]
    assert len(source_images) >= 10
    (conv,) = convert("codex", path)
    check_well_formed(conv.events)
    kept = [
        b["image_url"]["url"]
        for e in conv.events
        if e.type == "user/message" and isinstance(e.data["content"], list)
        for b in e.data["content"]
        if b["type"] == "image_url"
    ]
    assert kept == source_images and conv.warnings == []


def test_codex_tool_output_with_an_image(tmp_path: Path) -> None:
    def item(payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "t", "type": "response_item", "payload": payload}

    src = write_jsonl(
        tmp_path / "rollout.jsonl",
        [
            {"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}},
            item({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"}]}),
            item({"type": "function_call", "name": "view_image", "arguments": "{}", "call_id": "v1"}),
            item(
                {
                    "type": "function_call_output",
                    "call_id": "v1",
                    "output": [
                        {"type": "input_text", "text": "shown"},
                        {"type": "input_image", "image_url": f"data:image/png;base64,{PNG}", "detail": "low"},
                    ],
                }
            ),
        ],
    )
    (conv,) = convert("codex", src)
    [res] = [e.data["message"] for e in conv.events if e.type == "tool/result"]
    assert res["content"] == [
        {"type": "text", "text": "shown"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"}},
    ]


def test_openai_messages_and_swe_agent_keep_image_parts(tmp_path: Path) -> None:
    messages = [
        {"role": "system", "content": "s"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": "https://x/a.png"},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "shot", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "c",
            "content": [
                {"type": "text", "text": "ok"},
                {"type": "image_url", "image_url": {"url": "https://x/b.png"}},
            ],
        },
    ]
    src = tmp_path / "m.json"
    src.write_text(json.dumps(messages))
    traj = tmp_path / "t.traj"
    traj.write_text(json.dumps({"history": messages, "info": {"exit_status": "submitted"}}))
    for fmt, path in (("openai", src), ("swe-agent", traj)):
        (conv,) = convert(fmt, path)
        user = next(e.data for e in conv.events if e.type == "user/message")
        assert user["content"][1] == {"type": "image_url", "image_url": {"url": "https://x/a.png"}}, fmt
        res = next(e.data["message"] for e in conv.events if e.type == "tool/result")
        assert res["content"][1] == {"type": "image_url", "image_url": {"url": "https://x/b.png"}}, fmt


def test_openhands_message_images_are_kept(tmp_path: Path) -> None:
    events = [
        {
            "id": 1,
            "source": "user",
            "action": "message",
            "args": {"content": "fix the layout", "image_urls": [f"data:image/png;base64,{PNG}"]},
        },
        {"id": 2, "source": "agent", "action": "message", "args": {"content": "on it"}},
    ]
    src = tmp_path / "traj.json"
    src.write_text(json.dumps(events))
    (conv,) = convert("openhands", src)
    user = next(e.data for e in conv.events if e.type == "user/message")
    assert user["content"] == [
        {"type": "text", "text": "fix the layout"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
    ]
