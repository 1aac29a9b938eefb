"""The children of an imported Claude Code session: sub-agent runs and abandoned branches.

A sub-agent run becomes a child conversation linked ``{"kind": "subagent", "callId": …}`` to
the ``Task`` call it answers. The call is found, in this order, from the ``agentId`` the
call's result names (``toolUseResult.agentId``), from the ``agent_progress`` records of the
run (``parentToolUseID``), or from the prompt the call gave (the run's first message). A run
whose call cannot be found is still imported, linked without ``callId``, and warned about.

An abandoned branch becomes, with ``branches="all"``, a fork child: the whole thread it is
part of (the history before it, copied, then its own records), linked ``{"kind": "fork",
"atSeq": …}`` where ``atSeq`` is the last event the fork shares with its parent. With
``branches="current"`` it is left out and named in the parent's ``left_out``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigError
from foldlog.interchange import BRANCHES
from foldlog.interchange.events import Conversation
from foldlog.interchange.importers.claude_tree import Record, Split, Thread, split
from foldlog.interchange.source import iter_jsonl


def add_forks(conv: Conversation, thread: Thread, path: str | Path, branches: str) -> None:
    """Report (``current``) or import as fork children (``all``) the branches of ``thread``,
    recursively (a branch's own branches are forks of the fork)."""
    if branches not in BRANCHES:
        raise ConfigError(f"branches={branches!r}: expected one of {', '.join(BRANCHES)}")
    from foldlog.interchange.importers.claude_code import convert_records

    parent_lines = {line for line, _ in thread.records}
    for branch in thread.branches:
        own = [rec for line, rec in branch.records if line not in parent_lines]
        messages = sum(1 for rec in own if rec.get("type") in ("user", "assistant"))
        where = f"branch at line {branch.root_line}: {messages} records"
        if branches == "current":
            conv.left_out.append(f"{where} (an abandoned branch: --branches all imports it as a fork)")
            continue
        fork = convert_records(branch.records, path)
        shared = 0
        for mine, theirs in zip(fork.events, conv.events, strict=False):
            if mine != theirs:
                break
            shared += 1
        fork.name = f"fork-{len([c for c in conv.children if c.link and c.link['kind'] == 'fork']) + 1}"
        fork.id = f"{conv.id}.{fork.name}" if conv.id else None
        fork.link = {"kind": "fork", "atSeq": shared - 1}
        fork.meta["branchLine"] = branch.root_line
        conv.children.append(fork)
        add_forks(fork, branch, path, branches)


def add_subagents(
    conv: Conversation, records: list[Record], parts: Split, path: str | Path, branches: str
) -> None:
    """Child conversations for the sub-agent runs of the session: inline ones and the
    ``agent-*.jsonl`` files beside ``path``."""
    from foldlog.interchange.importers.claude_code import check_records, convert_records, unknown_records

    if not parts.main.records or all(rec.get("isSidechain") for _, rec in parts.main.records):
        return  # a sub-agent's own file: it has no sub-agents of its own here
    links = _call_links(records)
    runs: list[tuple[str | None, Thread, Path]] = [(a, t, Path(path)) for a, t in parts.sidechains]
    seen = {a for a, _, _ in runs if a}
    for file in agent_files(path, conv.id):
        sub = list(iter_jsonl(file, "Claude Code transcripts"))
        agent = next((rec.get("agentId") for _, rec in sub if isinstance(rec.get("agentId"), str)), None)
        agent = agent or file.stem.removeprefix("agent-")
        if agent.startswith("acompact"):
            conv.left_out.append(
                f"{file.name}: the summarizer call of a compaction (its summary is the fold in this log)"
            )
            continue
        if agent in seen:
            continue  # written inline and to a file: imported once
        seen.add(agent)
        check_records(sub, file)
        sub_parts = split(sub)
        conv.left_out.extend(f"{file.name}: {line}" for line in unknown_records(sub))
        runs.append((agent, sub_parts.main, file))
    for agent, thread, source in runs:
        child = convert_records(thread.records, source)
        first = _first_prompt(thread.records)
        call = links.get(f"agent:{agent}") if agent else None
        call = call or (links.get(f"prompt:{first}") if first is not None else None)
        name = f"agent-{agent}" if agent else f"agent-{len(conv.children) + 1}"
        child.name = name
        child.id = f"{conv.id}.{name}" if conv.id else None
        child.link = {"kind": "subagent", **({"callId": call} if call else {})}
        if agent:
            child.meta["agentId"] = agent
        if call is None:
            conv.warnings.append(f"sub-agent {name}: the Task call it answers was not found")
        add_forks(child, thread, path, branches)
        conv.children.append(child)


def agent_files(path: str | Path, session_id: str | None) -> list[Path]:
    """Sub-agent files of the session in ``path``: ``<stem>/subagents/agent-*.jsonl`` (newer
    CLIs), and ``agent-*.jsonl`` in the same folder whose records name the session (older)."""
    p = Path(path)
    found = sorted((p.parent / p.stem / "subagents").glob("agent-*.jsonl"))
    if session_id:
        for other in sorted(p.parent.glob("agent-*.jsonl")):
            if other != p and _session_of(other) == session_id:
                found.append(other)
    return found


def _session_of(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            first = handle.readline()
        value = json.loads(first).get("sessionId")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _call_links(records: list[Record]) -> dict[str, str]:
    """``agent:<agentId>`` and ``prompt:<text>`` → the id of the ``Task`` call."""
    from foldlog.interchange.importers.claude_code import task_calls

    links: dict[str, str] = {}
    for _, rec in records:
        result = rec.get("toolUseResult")
        content = (rec.get("message") or {}).get("content") if rec.get("type") == "user" else None
        if isinstance(result, dict) and isinstance(result.get("agentId"), str) and isinstance(content, list):
            ids = [
                b.get("tool_use_id")
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            if ids and isinstance(ids[0], str):
                links.setdefault(f"agent:{result['agentId']}", ids[0])
        data = rec.get("data")
        if rec.get("type") == "progress" and isinstance(data, dict) and data.get("type") == "agent_progress":
            if isinstance(data.get("agentId"), str) and isinstance(rec.get("parentToolUseID"), str):
                links.setdefault(f"agent:{data['agentId']}", rec["parentToolUseID"])
    for prompt, cid in task_calls(records).items():
        links.setdefault(f"prompt:{prompt}", cid)
    return links


def _first_prompt(records: list[Record]) -> str | None:
    for _, rec in records:
        if rec.get("type") == "user":
            content: Any = (rec.get("message") or {}).get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
                return "".join(t for t in texts if isinstance(t, str)) or None
            return None
    return None
