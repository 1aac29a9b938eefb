"""Every corpus transcript, every importer: what the written logs hold equals what the source holds
(issue 26, item 2).

Each file is imported through the import driver ``log import`` and ``batch import`` share
(`foldlog.interchange.import_logs`), with ``branches="all"``: the main log, its sub-agent logs
and its forks. The logs are read back and their user messages, replies, tool calls and tool
results are summed (a fork's copy of the history it shares with its parent counted once); the
source is counted here, independently, by a small counter per format. Nothing of a corpus file
is "left out" but the CLI notices the docs name.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foldlog import Session
from foldlog.interchange import convert
from foldlog.interchange.import_logs import plan_logs, write_logs
from foldlog.log.text import display_text
from tests.cli.cli_testlib import (
    OPENHANDS_FILES,
    _literal_list,
    aider_files,
    claude_files,
    codex_files,
    gemini_files,
)
from tests.interchange.test_interchange_gemini_aider import aider_source
from tests.interchange.test_interchange_many_roots import many_roots_session

KEYS = ("user", "assistant", "tool_calls", "tool_results")


# --- the source, counted independently -------------------------------------------------------


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def claude_subagent_files(path: Path) -> list[Path]:
    """A session's sub-agent files: ``<stem>/subagents/agent-*.jsonl`` and ``agent-*.jsonl``
    beside it naming its session; a compaction's summarizer call (``agent-acompact*``) is not one."""
    if path.name.startswith("agent-"):
        return []
    session = next((r.get("sessionId") for r in _lines(path) if r.get("sessionId")), None)
    found = sorted((path.parent / path.stem / "subagents").glob("agent-*.jsonl"))
    found += [
        p for p in sorted(path.parent.glob("agent-*.jsonl")) if _lines(p)[0].get("sessionId") == session
    ]
    return [p for p in found if not p.name.startswith("agent-acompact")]


def claude_counts(path: Path) -> list[Counter[str]]:
    counts: Counter[str] = Counter()
    for file in [path, *claude_subagent_files(path)]:
        replies: set[str] = set()
        for rec in _lines(file):
            content = (rec.get("message") or {}).get("content")
            blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            if rec.get("type") == "assistant":
                replies.add(rec["message"]["id"])
                counts["tool_calls"] += sum(b.get("type") in ("tool_use", "server_tool_use") for b in blocks)
                counts["tool_results"] += sum(str(b.get("type")).endswith("_tool_result") for b in blocks)
            elif rec.get("type") == "user":
                results = sum(b.get("type") == "tool_result" for b in blocks)
                counts["tool_results"] += results
                counts["user"] += not isinstance(content, list) or results < len(content)
        counts["assistant"] += len(replies)
    return [counts]


def codex_counts(path: Path) -> list[Counter[str]]:
    counts: Counter[str] = Counter()
    for rec in _lines(path):
        p = rec["payload"]
        if rec["type"] == "compacted":
            counts["user"] += 1  # the fold's digest is a user message
        if rec["type"] != "response_item":
            continue
        kind = p["type"]
        counts["tool_calls"] += kind in ("function_call", "custom_tool_call", "local_shell_call")
        counts["tool_results"] += kind.endswith("_call_output")
        counts["user"] += kind == "message" and p["role"] == "user"
    return [counts]


def chat_counts(messages: list[dict[str, Any]], calls_of: Callable[[dict[str, Any]], int]) -> Counter[str]:
    roles = Counter(m["role"] for m in messages)
    return Counter(
        user=roles["user"],
        assistant=roles["assistant"],
        tool_calls=sum(calls_of(m) for m in messages),
        tool_results=sum(
            len(_literal_list(m.get("tool_call_ids"))) or 1 for m in messages if m["role"] == "tool"
        ),
    )


def openai_counts(path: Path) -> list[Counter[str]]:
    return [
        chat_counts(rec["traj"], lambda m: len(m.get("tool_calls") or []))
        for rec in json.loads(path.read_text())
    ]


def swe_agent_counts(path: Path) -> list[Counter[str]]:
    history = json.loads(path.read_text(encoding="utf-8"))["history"]
    return [chat_counts(history, lambda m: len(_literal_list(m.get("tool_calls"))))]


def openhands_counts(path: Path) -> list[Counter[str]]:
    text = path.read_text(encoding="utf-8")
    streams = (
        [json.loads(x)["history"] for x in text.splitlines()]
        if path.suffix == ".jsonl"
        else [json.loads(text)]
    )
    out = []
    for events in streams:
        actions = [
            e for e in events if "action" in e and e["action"] not in ("recall", "change_agent_state", "null")
        ]
        responses = {
            e["tool_call_metadata"]["model_response"].get("id") for e in actions if "tool_call_metadata" in e
        }
        flat = [
            e
            for e in actions
            if "tool_call_metadata" not in e and e["action"] not in ("message", "system", "finish")
        ]
        said: Counter[str] = Counter()  # messages by who spoke (no source: the user, until a call)
        acted = False
        for e in actions:
            if e["action"] == "message" and "tool_call_metadata" not in e:
                said[e.get("source") or ("agent" if acted else "user")] += 1
            elif e["action"] == "finish" and "tool_call_metadata" not in e:
                said["agent"] += 1
            elif e["action"] != "system":
                acted = True
        observed = [
            e
            for e in events
            if "observation" in e and e["observation"] not in ("recall", "agent_state_changed", "null")
        ]
        calls = sum(1 for e in actions if "tool_call_metadata" in e) + len(flat)
        out.append(
            Counter(
                # every observation answers a call or speaks to the agent: a result or a message
                user_or_result=len(observed) + said["user"],
                assistant=len(responses) + len(flat) + said["agent"],
                tool_calls=calls,
            )
        )
    return out


def gemini_counts(path: Path) -> list[Counter[str]]:
    messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    calls = sum(len(m.get("toolCalls") or []) for m in messages)
    kinds = Counter(m["type"] for m in messages)
    return [Counter(user=kinds["user"], assistant=kinds["gemini"], tool_calls=calls, tool_results=calls)]


COUNTERS: dict[str, Callable[[Path], list[Counter[str]]]] = {
    "claude-code": claude_counts,
    "codex": codex_counts,
    "openai": openai_counts,
    "swe-agent": swe_agent_counts,
    "openhands": openhands_counts,
    "gemini": gemini_counts,
}


# --- the written logs ------------------------------------------------------------------------


def written_counts(logs: list[dict[str, Any]]) -> Counter[str]:
    """Messages, calls and results over every written log, as stored (load-time repairs left
    out); a fork's copy of its parent's history (up to ``atSeq``) is counted in the parent."""
    counts: Counter[str] = Counter()
    for log in logs:
        session = Session.load(log["path"])
        stored = len(session.events) - session.repair_report.get("events_added", 0)
        parent = log["parent"] or {}
        first = parent["atSeq"] + 1 if parent.get("kind") == "fork" else 0
        kinds = Counter(ev["type"] for ev in session.events[first:stored])
        counts["user"] += kinds["user/message"]
        counts["assistant"] += kinds["assistant/message"]
        counts["tool_calls"] += kinds["tool/call"]
        counts["tool_results"] += kinds["tool/result"]
    return counts


def import_all(fmt: str, src: Path, out: Path) -> list[list[dict[str, Any]]]:
    """Each transcript of ``src`` through the import driver: the reports of its logs."""
    logs = []
    for index, conv in enumerate(convert(fmt, src, branches="all")):
        sid = f"{src.stem}-{index}"
        logs.append(write_logs(plan_logs(conv, out / f"{sid}.jsonl", sid)))
    return logs


def corpus_files(corpus: Path) -> list[tuple[str, Path]]:
    jobs = [("claude-code", p) for p in claude_files(corpus)]
    jobs += [("codex", p) for p in codex_files(corpus)]
    jobs += [("openai", corpus / "tau-bench/gpt-4o-airline.json")]
    jobs += [("swe-agent", p) for p in sorted((corpus / "swe-agent").rglob("*.traj"))]
    jobs += [("openhands", corpus / rel) for rel in OPENHANDS_FILES]
    jobs += [("gemini", p) for p in gemini_files(corpus)]
    return jobs


def test_every_corpus_transcript_is_written_whole(corpus: Path, tmp_path: Path) -> None:
    jobs = corpus_files(corpus)
    assert len(jobs) >= 70 and {fmt for fmt, _ in jobs} == set(COUNTERS)
    # and a Claude Code 1.0.x session with three roots (no corpus file has one)
    (tmp_path / "synthetic").mkdir()
    jobs.append(("claude-code", many_roots_session(tmp_path / "synthetic" / "many-roots.jsonl")))
    totals: Counter[str] = Counter()
    children = 0
    for number, (fmt, src) in enumerate(jobs):
        expected = COUNTERS[fmt](src)
        written = import_all(fmt, src, tmp_path / str(number))
        assert len(written) == len(expected), src
        for logs, source in zip(written, expected, strict=True):
            got = written_counts(logs)
            if fmt == "openhands":
                got = Counter(
                    user_or_result=got["user"] + got["tool_results"],
                    assistant=got["assistant"],
                    tool_calls=got["tool_calls"],
                )
            for key in source:
                assert got[key] == source[key], (src, key, got, source)
            for log in logs:
                # only what is not conversation is ever left out, and it is named
                assert not any("does not know" in line or "no thread" in line for line in log["left_out"]), (
                    src,
                    log["left_out"],
                )
            children += len(logs) - 1
            totals.update(got)
        if fmt == "codex":  # replies are grouped per model call: every reply text is in one
            replies = " ".join(
                str(ev["data"]["message"]["content"])
                for log in written[0]
                for ev in Session.load(log["path"]).events
                if ev["type"] == "assistant/message"
            )
            texts = [
                display_text(r["payload"]["content"])
                for r in _lines(src)
                if r["type"] == "response_item" and r["payload"].get("type") == "message"
                if r["payload"]["role"] == "assistant"
            ]
            assert all(t in replies for t in texts), src
    assert children >= 10 and totals["tool_calls"] > 3000


def test_every_aider_session_is_written_whole(corpus: Path, tmp_path: Path) -> None:
    for number, src in enumerate(aider_files(corpus)):
        sessions, users, _chars = aider_source(src)
        written = import_all("aider", src, tmp_path / str(number))
        assert len(written) == sessions, src
        assert sum(written_counts(logs)["user"] for logs in written) == users, src
