"""Claude Code 1.0.x sessions with several roots (issue 26, item 2): every conversational record
ends up in a written log.

1.0.x wrote the continuation after an auto-compaction as a *new root* (an ``isCompactSummary``
prompt with ``parentUuid: null`` and no ``logicalParentUuid``, no ``compact_boundary``), plan
mode's "Implement the following plan:" starts another root in the same file, and sub-agent runs
are inline ``isSidechain`` records without ``agentId``. The records below have the envelope of
the corpus's real records (claude-code-spotter, codemie-code); the counts are read back from the
logs written by ``log import`` and by ``batch import`` and compared with the source, counted here
independently.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from foldlog import Session
from foldlog.batch import run_batch
from foldlog.interchange import convert
from foldlog.log.stats import log_stats
from tests.cli.cli_testlib import check_well_formed, run_cli

SESSION = "5b1c2d3e-0000-4000-8000-00000000010x"
VERSION = "1.0.51"
PLAN = "Implement the following plan:\n\n1. Add a --dry-run flag\n2. Test it"
SUMMARY = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\nAnalysis: the user asked to fix the parser bug."
)


class _Writer:
    """Records with the 1.0.x envelope (uuid / parentUuid / isSidechain / sessionId / version)."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.clock = 0

    def add(self, uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> None:
        self.clock += 1
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message = {
                "id": extra.pop("msg_id", f"msg_{uuid}"),
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-20250514",
                "content": content,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 4,
                    "cache_creation_input_tokens": 1200,
                    "cache_read_input_tokens": 9000 + self.clock,
                    "output_tokens": 30,
                },
            }
        self.lines.append(
            {
                "parentUuid": parent,
                "isSidechain": extra.pop("sidechain", False),
                "userType": "external",
                "cwd": "/home/USER/projects/parser",
                "sessionId": SESSION,
                "version": VERSION,
                "type": kind,
                "message": message,
                "uuid": uuid,
                "timestamp": f"2025-07-01T10:{self.clock // 60:02d}:{self.clock % 60:02d}.000Z",
                **extra,
            }
        )

    def call(
        self, uuid: str, parent: str, call_id: str, name: str, args: dict[str, Any], **extra: Any
    ) -> None:
        self.add(
            uuid,
            parent,
            "assistant",
            [{"type": "tool_use", "id": call_id, "name": name, "input": args}],
            **extra,
        )

    def result(self, uuid: str, parent: str, call_id: str, text: str, **extra: Any) -> None:
        block = {"tool_use_id": call_id, "type": "tool_result", "content": text}
        self.add(uuid, parent, "user", [block], **extra)


def many_roots_session(path: Path) -> Path:
    """Three roots (the first thread, a compact-summary continuation, a plan-mode root), a reply
    written over two lines, an inline sub-agent run without ``agentId``, and a summary title."""
    w = _Writer()
    # thread 1
    w.add("u1", None, "user", "fix the parser bug in parse.py")
    w.add(
        "a1",
        "u1",
        "assistant",
        [{"type": "thinking", "thinking": "Read it first.", "signature": "x"}],
        msg_id="msg_a1",
    )
    w.call("a1b", "a1", "toolu_read", "Read", {"file_path": "parse.py"}, msg_id="msg_a1")
    w.result("r1", "a1b", "toolu_read", "def parse(s): return s.split(',')")
    w.call(
        "a2",
        "r1",
        "toolu_task",
        "Task",
        {"description": "find callers", "prompt": "Find every caller of parse()"},
    )
    # the sub-agent run, inline (1.0.x): a root of its own, no agentId
    w.add("s1", None, "user", "Find every caller of parse()", sidechain=True)
    w.call("s2", "s1", "toolu_grep", "Grep", {"pattern": "parse\\("}, sidechain=True)
    w.result("s3", "s2", "toolu_grep", "cli.py:12\nweb.py:40", sidechain=True)
    w.add(
        "s4", "s3", "assistant", [{"type": "text", "text": "Two callers: cli.py and web.py."}], sidechain=True
    )
    w.result("r2", "a2", "toolu_task", "Two callers: cli.py and web.py.")
    w.call(
        "a3", "r2", "toolu_edit", "Edit", {"file_path": "parse.py", "old_string": "','", "new_string": "';'"}
    )
    w.result("r3", "a3", "toolu_edit", "The file parse.py has been updated.")
    w.add("a4", "r3", "assistant", [{"type": "text", "text": "Fixed the separator."}])
    # thread 2: the auto-compaction's continuation, a new root without logicalParentUuid
    w.add("c1", None, "user", SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    w.add("u2", "c1", "user", "now add a test for it")
    w.call("a5", "u2", "toolu_write", "Write", {"file_path": "test_parse.py", "content": "def test(): ..."})
    w.result("r5", "a5", "toolu_write", "File created successfully at: test_parse.py")
    w.add("a6", "r5", "assistant", [{"type": "text", "text": "Added test_parse.py."}])
    # thread 3: plan mode's "Implement the following plan", another root
    w.add("p1", None, "user", PLAN)
    w.call("a7", "p1", "toolu_bash", "Bash", {"command": "pytest -q"})
    w.result("r7", "a7", "toolu_bash", "2 passed")
    w.add("a8", "r7", "assistant", [{"type": "text", "text": "Done: the flag works and the tests pass."}])
    title = {"type": "summary", "summary": "Parser separator fix", "leafUuid": "a8"}
    lines = [*w.lines[:13], title, *w.lines[13:]]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


def source_counts(path: Path) -> Counter[str]:
    """Conversation records of a Claude Code file, counted from the source alone."""
    counts: Counter[str] = Counter()
    replies: set[str] = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        content: Any = (rec.get("message") or {}).get("content")
        if rec.get("type") == "assistant":
            replies.add(rec["message"]["id"])
            counts["tool_calls"] += sum(1 for b in content if b.get("type") == "tool_use")
        elif rec.get("type") == "user":
            results = (
                [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
            )
            counts["tool_results"] += len(results)
            counts["user"] += 1 if not isinstance(content, list) or len(results) < len(content) else 0
    counts["assistant"] = len(replies)
    return counts


def log_counts(paths: list[Path]) -> Counter[str]:
    """The same counts over written logs, as stored (load-time repairs left out)."""
    counts: Counter[str] = Counter()
    for path in paths:
        session = Session.load(path)
        stored = len(session.events) - session.repair_report.get("events_added", 0)
        types = Counter(ev["type"] for ev in session.events[:stored])
        counts["user"] += types["user/message"]
        counts["assistant"] += types["assistant/message"]
        counts["tool_calls"] += types["tool/call"]
        counts["tool_results"] += types["tool/result"]
    return counts


def test_every_root_of_a_1_0_session_is_imported(tmp_path: Path) -> None:
    src = many_roots_session(tmp_path / f"{SESSION}.jsonl")
    (conv,) = convert("claude-code", src)
    assert conv.left_out == [] and conv.warnings == []
    assert (conv.counts.tool_calls, conv.counts.tool_results) == (5, 5)  # was 1 and 1: the last root
    assert conv.counts.compactions == 1 and conv.counts.messages == Counter(user=4, assistant=8)
    check_well_formed(conv.events)
    users = [ev for ev in conv.events if ev.type == "user/message"]
    assert [ev.data["content"] for ev in users] == [
        "fix the parser bug in parse.py",
        SUMMARY,
        "now add a test for it",
        PLAN,
    ]
    # the compact-summary root continues the thread as a fold of everything before it ...
    digest = users[1]
    assert digest.data["source"] == "compaction" and isinstance(digest.surface_op, dict)
    assert digest.surface_op["op"] == "fold" and digest.source_event_seqs
    # ... and the plan-mode root starts the model's context over: a reset in the same log
    assert users[3].surface_op == {"op": "reset", "keep": []}
    (child,) = conv.children
    assert child.link == {"kind": "subagent", "callId": "toolu_task"} and child.counts.tool_calls == 1
    check_well_formed(child.events)


def test_log_import_and_batch_import_write_every_record(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    src = many_roots_session(tmp_path / "src" / f"{SESSION}.jsonl")
    expected = source_counts(src)
    assert expected == Counter(user=5, assistant=10, tool_calls=6, tool_results=6)

    out = tmp_path / "cli"
    proc = run_cli(
        "log", "import", "--from", "claude-code", str(src), "-o", f"{out}/", "--json", home=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    assert [w["parent"]["kind"] if w["parent"] else None for w in written] == [None, "subagent"]
    assert all(w["left_out"] == [] for w in written)
    assert log_counts([Path(w["path"]) for w in written]) == expected

    report = run_batch(
        "import", [str(src)], from_format="claude-code", out=tmp_path / "batch", engine="serial"
    )
    assert report.summary["errors"] == 0
    assert [(r["session"], r["parent"], r["link"]) for r in report.rows] == [
        (w["id"], w["parent"]["id"] if w["parent"] else None, w["parent"]["kind"] if w["parent"] else None)
        for w in written
    ]
    batch_paths = [Path(r["path"]) for r in report.rows]
    assert [p.name for p in batch_paths] == [Path(w["path"]).name for w in written]
    assert log_counts(batch_paths) == expected
    # the same logs, event for event (only the import's clock differs)
    for cli_log, batch_log in zip(written, batch_paths, strict=True):
        a, b = Session.load(cli_log["path"]), Session.load(batch_log)
        assert [(e["type"], e["data"]) for e in a.events] == [(e["type"], e["data"]) for e in b.events]
        assert a.parent == b.parent


def test_the_written_log_derives_what_the_model_saw_after_the_plan_root(tmp_path: Path) -> None:
    src = many_roots_session(tmp_path / f"{SESSION}.jsonl")
    out = tmp_path / "main.jsonl"
    proc = run_cli("log", "import", "--from", "claude-code", str(src), "-o", str(out), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    session = Session.load(out)
    assert not session.normalized_dirty
    derived = session.derive_messages()
    assert [m["role"] for m in derived] == ["user", "assistant", "tool", "assistant"]
    assert derived[0]["content"] == PLAN
    assert log_stats(session)["compactions"] == 1
