"""``foldlog log fork``, ``foldlog sessions`` as a tree, ``foldlog log export --to …`` — run as a
user would (``python -m foldlog`` with an isolated home)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path
from typing import Any

from foldlog import Session, thaw
from foldlog.interchange import convert, write_conversation
from foldlog.interchange.exports.atif_schema import atif_errors
from tests.cli.cli_testlib import run_cli

# a 1x1 PNG
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _call(cid: str, name: str, args: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def _parent_with_fold_subagent_and_image(folder: Path) -> Session:
    """A session with an image, a ``task`` call answered by a sub-agent's session, and a fold
    that keeps the latest exchange after its digest (foldlog's own compaction shape)."""
    s = Session.open(folder, "parent", system="You are the lead.")
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    s.add({"role": "user", "content": [{"type": "text", "text": "What is in this picture?"}, image]})
    s.add(
        {
            "role": "assistant",
            "content": "A dot. Let me delegate.",
            "tool_calls": [_call("call_task", "task", '{"prompt": "measure it"}')],
        }
    )
    s.add({"role": "tool", "tool_call_id": "call_task", "content": "It is 1x1 pixels."})
    s.add({"role": "assistant", "content": "It is a 1x1 image."})
    s.add({"role": "user", "content": "Thanks. Read the file."})
    s.add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [_call("call_read", "read_file", '{"path":"dot.png"}')],
        }
    )
    shot = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    s.add(
        {"role": "tool", "tool_call_id": "call_read", "content": [{"type": "text", "text": "dot.png"}, shot]}
    )
    nodes = s.surface_nodes()  # [system, u, a, tool, a, u, a, tool]
    s.append_event("compaction/start", {"id": "c1", "trigger": "auto"})
    s.append_event(
        "compaction/summary",
        {
            "id": "c1",
            "summary": "The user showed a dot.",
            "folded": nodes[1:5],
            "kept": [],
            "mechanical": False,
        },
    )
    s.append_event(
        "user/message",
        {"role": "user", "content": "The user showed a dot.", "source": "compaction"},
        surface_op={"op": "fold", "start": nodes[1], "end": nodes[4], "keep": []},
        source_event_seqs=nodes[1:5],
    )
    s.append_event("compaction/end", {"id": "c1"})
    s.add({"role": "assistant", "content": "Done."})
    s.close()
    child = Session.open(
        folder, "child-1", parent={"kind": "subagent", "id": "parent", "callId": "call_task"}
    )
    child.add({"role": "user", "content": "measure it"})
    child.add({"role": "assistant", "content": "It is 1x1 pixels."})
    child.close()
    return Session.load(folder / "parent.jsonl")


def _derived(session: Session) -> list[Any]:
    return [m for m in thaw(list(session.derive_messages())) if m["role"] != "system"]


def _images(messages: list[Any]) -> list[str]:
    found = []
    for m in messages:
        for block in m["content"] if isinstance(m["content"], list) else []:
            if block.get("type") == "image":
                found.append(block["source"]["data"])
            elif block.get("type") == "image_url":
                found.append(block["image_url"]["url"].split(",", 1)[1])
    return found


def test_export_to_claude_code_with_a_fold_a_subagent_and_an_image(tmp_path: Path) -> None:
    sessions = tmp_path / "home" / "sessions"
    parent = _parent_with_fold_subagent_and_image(sessions)
    out = tmp_path / "out" / "exported.jsonl"
    proc = run_cli("log", "export", "--to", "claude-code", "parent", "-o", str(out), home=tmp_path / "home")
    assert proc.returncode == 0, proc.stderr
    assert "1 system message(s) left out" in proc.stderr
    records = [json.loads(x) for x in out.read_text(encoding="utf-8").splitlines()]
    assert [r["parentUuid"] for r in records[1:] if r.get("subtype") != "compact_boundary"] == [
        r["uuid"] for r, nxt in pairwise(records) if nxt.get("subtype") != "compact_boundary"
    ]
    assert all(r["sessionId"] == "parent" and not r["isSidechain"] for r in records)
    task_result = next(r for r in records if r.get("toolUseResult"))
    assert task_result["toolUseResult"]["agentId"] == "child-1"
    sub = out.parent / "exported" / "subagents" / "agent-child-1.jsonl"
    sub_records = [json.loads(x) for x in sub.read_text(encoding="utf-8").splitlines()]
    assert all(
        r["isSidechain"] and r["agentId"] == "child-1" and r["sessionId"] == "parent" for r in sub_records
    )

    (conv,) = convert("claude-code", out)
    back = Session(id="back")
    write_conversation(conv, back)
    got, want = _derived(back), _derived(parent)
    assert (
        [m["role"] for m in got]
        == [m["role"] for m in want]
        == ["user", "user", "assistant", "tool", "assistant"]
    )
    assert got[0]["content"] == "The user showed a dot." and got[-1]["content"] == "Done."
    assert _images(got) == _images(want) == [PNG]
    assert conv.counts.compactions == 1
    assert [m.get("tool_calls", [{}])[0].get("id") for m in got] == [None, None, "call_read", None, None]
    assert conv.counts.tool_calls == 2 and conv.counts.tool_results == 2
    (child_conv,) = convert("claude-code", sub)
    assert [e.data["content"] for e in child_conv.events if e.type == "user/message"] == ["measure it"]

    atif = run_cli("log", "export", "--to", "atif", "parent", home=tmp_path / "home")
    assert atif.returncode == 0, atif.stderr
    doc = json.loads(atif.stdout)
    assert atif_errors(doc) == [] and doc["subagent_trajectories"][0]["trajectory_id"] == "child-1"
    sources = [s["source"] for s in doc["steps"]]
    assert sources == ["system", "user", "agent", "agent", "system", "user", "agent", "agent"]
    assert doc["steps"][4]["message"] == "The user showed a dot."
    assert doc["steps"][6]["observation"]["results"][0]["source_call_id"] == "call_read"
    refused = run_cli("log", "export", "--to", "claude-code", "parent", home=tmp_path / "home")
    assert refused.returncode != 0 and "-o FILE" in refused.stderr
    alone = run_cli("log", "export", "--to", "codex", "parent", home=tmp_path / "home")
    assert alone.returncode == 0 and "sub-agent session(s) not carried" in alone.stderr
    assert json.loads(alone.stdout.splitlines()[0])["type"] == "session_meta"


def test_fork_from_the_cli_and_the_sessions_tree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sessions = home / "sessions"
    _parent_with_fold_subagent_and_image(sessions)
    proc = run_cli("log", "fork", "parent", "--at", "3", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    made = json.loads(proc.stdout)
    assert made["parent"] == "parent" and made["at_seq"] == 3 and made["events"] == 4
    fork = Session.load(made["path"])
    assert [m["role"] for m in fork.derive_messages()] == ["system", "user", "assistant", "tool"]
    bad = run_cli("log", "fork", "parent", "--at", "999", home=home)
    assert bad.returncode != 0 and "no stored event #999" in bad.stderr

    listing = json.loads(run_cli("sessions", "--json", home=home).stdout)["sessions"]
    tree = [(r["id"], r["depth"], r["parent_kind"]) for r in listing]
    assert tree[0] == ("parent", 0, None)
    assert sorted(tree[1:]) == sorted([(made["id"], 1, "fork"), ("child-1", 1, "subagent")])
    text = run_cli("sessions", home=home).stdout
    assert f"└ {made['id']} (fork)" in text and "└ child-1 (subagent)" in text
    lines = text.splitlines()
    assert lines.index(next(x for x in lines if "child-1" in x)) > lines.index(
        next(x for x in lines if x.startswith("parent"))
    )
