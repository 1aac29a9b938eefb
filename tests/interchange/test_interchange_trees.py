"""Claude Code sessions are trees (issue 18, items 1-2): the main thread is the chain the session
ended on, sub-agents are child sessions, abandoned branches are reported or become forks, and
every event keeps the source's time."""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from foldlog.interchange import convert
from foldlog.interchange.events import Conversation
from foldlog.interchange.writer import write_conversation
from foldlog.log.session import Session
from tests.cli.cli_testlib import check_well_formed, claude_files, run_cli

SPOTTER = "claude-code-spotter"
WITH_AGENTS = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"  # two Task sub-agents + one compaction call


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def ms(stamp: str) -> int:
    return round(datetime.fromisoformat(stamp).timestamp() * 1000)


# --- the main thread, read independently from the source -----------------------------------


def main_thread(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The source's thread: back from the last non-sidechain message along ``parentUuid`` (a
    parent the file lacks, or a compaction boundary's missing one, is the message before it),
    plus the other lines of its replies and the results of its calls."""
    side = [r for r in recs if not r.get("isSidechain")]
    if not any(r.get("type") in ("user", "assistant") for r in side):
        side = recs
    by_id = {r["uuid"]: r for r in side if "uuid" in r}
    before: dict[str, str | None] = {}
    last_message: str | None = None
    for r in side:
        if "uuid" in r:
            before[r["uuid"]] = last_message
            if r["type"] in ("user", "assistant"):
                last_message = r["uuid"]

    def parent(r: dict[str, Any]) -> str | None:
        p = r.get("parentUuid") or r.get("logicalParentUuid")
        if p is None and r.get("subtype") != "compact_boundary":
            return None
        return p if p in by_id else before[r["uuid"]]

    leaf = [r for r in side if r.get("type") in ("user", "assistant")][-1]
    chain: set[str] = set()
    at: str | None = leaf["uuid"]
    while at is not None and at not in chain:
        chain.add(at)
        at = parent(by_id[at])
    replies = {by_id[u]["message"]["id"] for u in chain if by_id[u]["type"] == "assistant"}
    calls = {
        b["id"]
        for r in side
        if r["type"] == "assistant" and r["message"]["id"] in replies
        for b in r["message"]["content"]
        if b.get("type") == "tool_use"
    }

    def on_thread(r: dict[str, Any]) -> bool:
        if r.get("uuid") in chain:
            return True
        if r.get("type") == "assistant":
            return r["message"]["id"] in replies
        content = r.get("message", {}).get("content") if r.get("type") == "user" else None
        return (
            isinstance(content, list)
            and bool(content)
            and all(b.get("type") == "tool_result" and b["tool_use_id"] in calls for b in content)
        )

    return [r for r in side if r.get("type") in ("user", "assistant", "system") and on_thread(r)]


def counts_of(recs: list[dict[str, Any]]) -> dict[str, int]:
    c = Counter[str]()
    replies = set()
    for r in recs:
        content = r.get("message", {}).get("content")
        if r["type"] == "assistant":
            replies.add(r["message"]["id"])
            c["tool_calls"] += sum(1 for b in content if b.get("type") == "tool_use")
        elif r["type"] == "user":
            results = (
                [b for b in content if b.get("type") == "tool_result"] if isinstance(content, list) else []
            )
            c["tool_results"] += len(results)
            c["user"] += not isinstance(content, list) or len(results) < len(content)
    c["assistant"] = len(replies)
    return dict(c)


def got_counts(conv: Conversation) -> dict[str, int]:
    return {
        "assistant": conv.counts.messages["assistant"],
        "user": conv.counts.messages["user"],  # a compaction digest is the summary record
        "tool_calls": conv.counts.tool_calls,
        "tool_results": conv.counts.tool_results,
    }


def test_every_claude_code_file_imports_its_main_thread(corpus: Path) -> None:
    files = claude_files(corpus)
    assert len(files) >= 30
    children = 0
    for path in files:
        (conv,) = convert("claude-code", path)
        src = counts_of(main_thread(records(path)))
        assert got_counts(conv) == {k: src.get(k, 0) for k in got_counts(conv)}, path
        check_well_formed(conv.events)
        for child in conv.tree()[1:]:
            check_well_formed(child.events)
        children += len(conv.tree()) - 1
    assert children >= 9


def test_agent_files_become_children_linked_to_their_task_call(corpus: Path) -> None:
    path = corpus / SPOTTER / f"{WITH_AGENTS}.jsonl"
    (conv,) = convert("claude-code", path)
    folder = corpus / SPOTTER / WITH_AGENTS / "subagents"
    agents = sorted(p for p in folder.glob("agent-*.jsonl") if "acompact" not in p.name)
    assert [c.name for c in conv.children] == [p.stem for p in agents] and len(agents) == 2
    task_calls = {
        b["id"]: b["input"]["prompt"]
        for r in records(path)
        if r["type"] == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "tool_use" and b["name"] == "Task"
    }
    main_calls = {ev.data["callId"] for ev in conv.events if ev.type == "tool/call"}
    for child, agent_file in zip(conv.children, agents, strict=True):
        assert child.link is not None and child.link["kind"] == "subagent"
        call = child.link["callId"]
        assert call in task_calls and call in main_calls  # the Task call and its result stay in the parent
        first = next(ev for ev in child.events if ev.type == "user/message")
        assert first.data["content"] == task_calls[call]
        (alone,) = convert("claude-code", agent_file)
        assert child.counts.as_dict() == alone.counts.as_dict() and child.counts.tool_calls > 20
        assert child.meta["source"] == agent_file.name and child.meta["agentId"] == agent_file.stem[6:]
    # the compaction's summarizer call is not a sub-agent: reported, not imported
    assert any("agent-acompact-70d8e7.jsonl" in line for line in conv.left_out)


def inline(main: Path, agent: Path, dst: Path, *, strip_agent_ids: bool = False) -> Path:
    """``main`` with ``agent``'s records written into it right after the Task call they answer,
    as older Claude Code versions did (and without the files beside it)."""
    agent_recs = records(agent)
    prompt = agent_recs[0]["message"]["content"]
    out: list[dict[str, Any]] = []
    for r in records(main):
        out.append(r)
        if r["type"] == "assistant" and any(
            b.get("type") == "tool_use" and b["input"].get("prompt") == prompt
            for b in r["message"]["content"]
        ):
            out.extend(agent_recs)
    assert len(out) == len(records(main)) + len(agent_recs)
    if strip_agent_ids:
        for r in out:
            r.pop("agentId", None)
            r.pop("toolUseResult", None)
            if r.get("type") == "progress":
                r.get("data", {}).pop("agentId", None)
    dst.write_text("".join(json.dumps(r) + "\n" for r in out), encoding="utf-8")
    return dst


@pytest.mark.parametrize("strip_agent_ids", [False, True])
def test_inline_sidechain_is_split_off_into_a_child(
    tmp_path: Path, corpus: Path, strip_agent_ids: bool
) -> None:
    main = corpus / SPOTTER / f"{WITH_AGENTS}.jsonl"
    agent = corpus / SPOTTER / WITH_AGENTS / "subagents/agent-a93ccab.jsonl"
    src = inline(main, agent, tmp_path / f"{WITH_AGENTS}.jsonl", strip_agent_ids=strip_agent_ids)
    (conv,) = convert("claude-code", src)
    (before,) = convert("claude-code", main)
    # the sub-agent's prompt and its calls stay out of the main conversation
    assert conv.counts.as_dict() == before.counts.as_dict()
    assert counts_of(main_thread(records(src))) == counts_of(main_thread(records(main)))
    assert [c.link["kind"] if c.link else None for c in conv.children] == ["subagent"]
    (child,) = conv.children
    (alone,) = convert("claude-code", agent)
    assert child.counts.as_dict() == alone.counts.as_dict() and child.counts.tool_calls == 25
    assert child.link == {"kind": "subagent", "callId": "toolu_01Y64XEaRvUYinzv9rW9qZXd"}
    assert [ev.data for ev in child.events] == [ev.data for ev in alone.events]


# --- branches ------------------------------------------------------------------------------


def rewind_session(path: Path) -> Path:
    """A session with a checkpoint rewind: three prompts under one reply; it ends on the third."""
    lines: list[dict[str, Any]] = []
    clock = iter(range(10, 60))

    def add(uuid: str, parent: str | None, kind: str, content: Any, **extra: Any) -> None:
        message: dict[str, Any] = {"role": kind, "content": content}
        if kind == "assistant":
            message.update(
                id=f"msg_{uuid}", model="claude-test", usage={"input_tokens": 3, "output_tokens": 2}
            )
        lines.append(
            {
                "type": kind,
                "uuid": uuid,
                "parentUuid": parent,
                "sessionId": "rewind-1",
                "isSidechain": False,
                "timestamp": f"2026-03-01T10:00:{next(clock):02d}.250Z",
                "message": message,
                **extra,
            }
        )

    def call(uuid: str, parent: str, call_id: str) -> None:
        add(
            uuid,
            parent,
            "assistant",
            [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}],
        )

    def result(uuid: str, parent: str, call_id: str) -> None:
        add(uuid, parent, "user", [{"type": "tool_result", "tool_use_id": call_id, "content": "a.txt"}])

    add("u1", None, "user", "list the files")
    call("a1", "u1", "t1")
    result("r1", "a1", "t1")
    add("a2", "r1", "assistant", [{"type": "text", "text": "There is a.txt."}])
    add("u2", "a2", "user", "now delete it")  # abandoned: rewound
    call("a3", "u2", "t2")
    result("r3", "a3", "t2")
    add("u3", "a2", "user", "no, rename it")  # abandoned too
    add("a4", "u3", "assistant", [{"type": "text", "text": "Renamed."}])
    add("u4", "a2", "user", "just print it")  # the branch the session ended on
    call("a5", "u4", "t3")
    result("r5", "a5", "t3")
    add("a6", "r5", "assistant", [{"type": "text", "text": "Done."}])
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    return path


def user_texts(conv: Conversation) -> list[str]:
    return [ev.data["content"] for ev in conv.events if ev.type == "user/message"]


def test_branches_current_keeps_the_branch_the_session_ended_on(tmp_path: Path) -> None:
    (conv,) = convert("claude-code", rewind_session(tmp_path / "rewind.jsonl"))
    assert user_texts(conv) == ["list the files", "just print it"]
    assert conv.counts.tool_calls == 2 and conv.counts.messages["assistant"] == 4
    assert conv.children == []
    assert len(conv.left_out) == 2 and all("abandoned branch" in line for line in conv.left_out)
    assert "line 5: 3 records" in conv.left_out[0] and "line 8: 2 records" in conv.left_out[1]
    check_well_formed(conv.events)


def test_branches_all_makes_forks_that_share_the_history_up_to_the_fork_point(tmp_path: Path) -> None:
    (conv,) = convert("claude-code", rewind_session(tmp_path / "rewind.jsonl"), branches="all")
    assert user_texts(conv) == ["list the files", "just print it"] and conv.left_out == []
    assert [c.name for c in conv.children] == ["fork-1", "fork-2"]
    assert [user_texts(c) for c in conv.children] == [
        ["list the files", "now delete it"],
        ["list the files", "no, rename it"],
    ]
    for fork in conv.children:
        assert fork.link is not None and fork.link["kind"] == "fork"
        at = fork.link["atSeq"]
        assert fork.events[: at + 1] == conv.events[: at + 1]  # the same history up to atSeq ...
        assert fork.events[at + 1] != conv.events[at + 1]  # ... then it diverges
        # the fork point is the reply the three prompts answer
        shared = conv.events[: at + 1]
        assert [ev.data["message"]["content"] for ev in shared if ev.type == "assistant/message"][-1] == (
            "There is a.txt."
        )
        check_well_formed(fork.events)
    assert conv.children[0].counts.tool_calls == 2


def test_cli_writes_forks_and_sub_agents_with_their_parent_links(tmp_path: Path, corpus: Path) -> None:
    src = rewind_session(tmp_path / "rewind.jsonl")
    out = tmp_path / "out"
    current = run_cli("log", "import", "--from", "claude-code", str(src), "-o", f"{out}/", home=tmp_path)
    assert current.returncode == 0, current.stderr
    assert current.stdout.count("left out: branch at line") == 2 and "(fork of" not in current.stdout
    assert sorted(p.name for p in out.iterdir()) == ["rewind-1.jsonl"]
    every = run_cli(
        "log",
        "import",
        "--from",
        "claude-code",
        str(src),
        "--branches",
        "all",
        "-o",
        f"{out}/",
        "--force",
        home=tmp_path,
    )
    assert every.returncode == 0, every.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "rewind-1.fork-1.jsonl",
        "rewind-1.fork-2.jsonl",
        "rewind-1.jsonl",
    ]
    assert "(fork of rewind-1 after event" in every.stdout and "left out" not in every.stdout
    parent = Session.load(out / "rewind-1.jsonl")
    fork = Session.load(out / "rewind-1.fork-1.jsonl")
    assert fork.parent is not None and fork.parent["id"] == parent.id == "rewind-1"
    assert fork.parent["kind"] == "fork"
    at = fork.parent["atSeq"]
    assert [dict(ev) for ev in fork.events[: at + 1]] == [dict(ev) for ev in parent.events[: at + 1]]

    # sub-agents: one child log per Task run, its header naming the parent and the call
    main = corpus / SPOTTER / f"{WITH_AGENTS}.jsonl"
    proc = run_cli(
        "log",
        "import",
        "--from",
        "claude-code",
        str(main),
        "-o",
        str(tmp_path / "s.jsonl"),
        "--json",
        home=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    assert [Path(w["path"]).name for w in written] == [
        "s.jsonl",
        "s.agent-a93ccab.jsonl",
        "s.agent-aa84377.jsonl",
    ]
    assert written[0]["parent"] is None and written[0]["tool_calls"] == 197
    assert any("acompact" in line for line in written[0]["left_out"])
    for item in written[1:]:
        child = Session.load(item["path"])
        assert child.parent is not None and dict(child.parent) == item["parent"]
        assert child.parent["id"] == WITH_AGENTS and child.parent["kind"] == "subagent"
        assert child.parent["callId"].startswith("toolu_")


# --- source times and privacy --------------------------------------------------------------


def test_events_keep_the_source_times(corpus: Path, tmp_path: Path) -> None:
    path = corpus / SPOTTER / f"{WITH_AGENTS}.jsonl"
    recs = {
        n: r for n, r in enumerate((json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()), 1)
    }
    (conv,) = convert("claude-code", path)
    messages = [ev for ev in conv.events if ev.type in ("user/message", "assistant/message", "tool/result")]
    assert len(messages) > 300
    for ev in messages:
        assert ev.source_line is not None
        assert ev.time == ms(recs[ev.source_line]["timestamp"]), ev
    session = Session(id="t")
    write_conversation(conv, session)
    times = [ev["time"] for ev in session.events]
    assert all(isinstance(t, int) for t in times)
    assert times[0] == messages[0].time  # the turn/start before the first prompt takes its time
    for ev, stored in zip(conv.events, session.events, strict=True):
        if ev.time is not None:
            assert stored["time"] == ev.time
    assert len(set(times)) > 100  # not one import clock for all


def test_no_absolute_path_is_written_and_the_header_records_the_import(tmp_path: Path, corpus: Path) -> None:
    src = corpus / SPOTTER / f"{WITH_AGENTS}.jsonl"
    out = tmp_path / "logs"
    before = int(time.time() * 1000)
    proc = run_cli("log", "import", "--from", "claude-code", str(src), "-o", f"{out}/", home=tmp_path)
    after = int(time.time() * 1000)
    assert proc.returncode == 0, proc.stderr
    files = sorted(out.iterdir())
    assert len(files) == 3
    for file in files:
        data = file.read_bytes()
        for secret in (str(src.resolve()), str(src.parent.resolve()), str(corpus.resolve()), str(tmp_path)):
            assert secret.encode() not in data, (file, secret)
        header = json.loads(data.splitlines()[0])
        imported = header["meta"]["imported"]
        assert "/" not in imported["source"] and imported["source"].endswith(".jsonl")
        assert before <= header["meta"]["importedAt"] <= after
        if file.name == f"{WITH_AGENTS}.jsonl":
            first_prompt = next(r for r in records(src) if r["type"] == "user")
            assert json.loads(data.splitlines()[1])["time"] == ms(first_prompt["timestamp"])


def test_a_batch_event_keeps_its_own_time_and_a_bad_one_is_refused() -> None:
    from foldlog.errors import InvalidEventError

    session = Session(id="times")
    user = {"type": "user/message", "data": {"role": "user", "content": "hi"}, "surfaceOp": "append"}
    session.append_events([{**user, "time": 1_700_000_000_123}, user])
    first, second = session.events
    assert first["time"] == 1_700_000_000_123 and second["time"] > first["time"]  # the session's clock
    with pytest.raises(InvalidEventError, match=r'"time" must be an integer'):
        session.append_events([{**user, "time": "yesterday"}])
    assert len(session.events) == 2


def test_codex_cut_short_tasks_end_aborted_and_events_keep_line_times(corpus: Path) -> None:
    from tests.cli.cli_testlib import codex_files

    aborted_total = 0
    for path in codex_files(corpus):
        lines = records(path)
        started_open = False
        aborted = 0
        for rec in lines:
            kind = rec["payload"].get("type") if rec["type"] == "event_msg" else None
            if kind == "task_started":
                aborted += started_open
                started_open = True
            elif kind in ("task_complete", "turn_aborted"):
                aborted += kind == "turn_aborted"
                started_open = False
        (conv,) = convert("codex", path)
        ends = [ev.data["reason"]["kind"] for ev in conv.events if ev.type == "turn/end"]
        assert ends.count("aborted") == aborted, path
        aborted_total += aborted
        for ev in conv.events:
            if ev.type in ("user/message", "tool/result") and ev.source_line is not None:
                assert ev.time == ms(lines[ev.source_line - 1]["timestamp"]), (path, ev)
    assert aborted_total >= 1  # one in the corpus (its last task is open at the end: not aborted)


def test_a_root_the_session_did_not_go_on_from_is_a_branch_never_lost(tmp_path: Path) -> None:
    path = rewind_session(tmp_path / "rewind.jsonl")
    recs = records(path)
    stray = {
        **recs[0],
        "uuid": "s1",
        "parentUuid": None,
        "message": {"role": "user", "content": "a new root"},
    }
    path.write_text("".join(json.dumps(r) + "\n" for r in [*recs[:3], stray, *recs[3:]]), encoding="utf-8")
    (conv,) = convert("claude-code", path)
    assert "a new root" not in user_texts(conv)
    assert "branch at line 4: 1 records (an abandoned branch: --branches all imports it as a fork)" in (
        conv.left_out
    )
    (conv,) = convert("claude-code", path, branches="all")
    (fork,) = [c for c in conv.children if "a new root" in user_texts(c)]
    # the new root starts the model's context over: a reset, after the history it followed
    (restart,) = [
        ev for ev in fork.events if ev.type == "user/message" and ev.data["content"] == "a new root"
    ]
    assert restart.surface_op == {"op": "reset", "keep": []}
    assert not any("on no thread" in line for line in conv.left_out)
    check_well_formed(fork.events)
