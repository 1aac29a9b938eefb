"""Claude Code records as a tree: the thread a session ended on, its sub-agents, its branches.

Every record names its parent (``parentUuid``; a compaction boundary starts a new root and
names the record before it in ``logicalParentUuid``; a message that starts a new root later in
the file — 1.0.x's continuation after a compaction, plan mode's new root — continues the message
before it, so no thread is lost). The history the session ended on is the
chain from its last message back to the root — but the chain alone is not all of it: a reply
written over several lines, and the results of parallel calls, hang off the line that carried
their call, beside the chain. A record off the chain is therefore *part of the thread* when it
is a line of a reply on the thread (same ``message.id``), the results of calls on the thread,
or not history at all (progress, hooks); anything else that starts off a record of the thread
— a new prompt, a reply of its own — is an abandoned *branch* (a checkpoint rewind, a retry),
and the first record of it is the branch's root.

Sub-agent (``Task``) records carry ``isSidechain: true`` and start at a root of their own; in
older sessions they are written into the main file, in newer ones into ``agent-*.jsonl`` files
beside it. Each run is grouped by its ``agentId`` (or, without one, by its root).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

Record = tuple[int, dict[str, Any]]  # (source line, record)

_MESSAGES = ("user", "assistant")


@dataclass(slots=True)
class Thread:
    """One line of history: its records in file order, the branches that leave it, and — for
    a branch — the record it leaves its parent thread at."""

    records: list[Record]
    branches: list[Thread] = field(default_factory=list)
    root_line: int | None = None  # first record of the branch (None for the main thread)


@dataclass(slots=True)
class Split:
    """A file's records sorted out: the main thread (with its branches), the inline sub-agent
    runs (each a thread with its branches), and how many messages belong to none (they hang
    from another root than the thread's)."""

    main: Thread
    sidechains: list[tuple[str | None, Thread]]
    unlinked: int


def is_tree(records: Iterable[Record]) -> bool:
    """Whether the records link up at all: every message has a ``uuid`` (hand-written or
    stripped-down transcripts without one are read in file order)."""
    messages = [rec for _, rec in records if rec.get("type") in _MESSAGES]
    return bool(messages) and all(isinstance(rec.get("uuid"), str) for rec in messages)


def split(records: list[Record]) -> Split:
    """Sort ``records`` (a whole file, in order) into threads; see the module docstring."""
    if not is_tree(records):
        return Split(Thread(list(records)), [], 0)
    main_side = [r for r in records if not r[1].get("isSidechain")]
    side = [r for r in records if r[1].get("isSidechain")]
    if not any(rec.get("type") in _MESSAGES for _, rec in main_side):
        # a sub-agent's own file: all of it is its thread
        main_side, side = records, []
    main, unlinked = _threads(main_side)
    runs: list[tuple[str | None, Thread]] = []
    for agent, group in _runs(side):
        thread, lost = _threads(group)
        runs.append((agent, thread))
        unlinked += lost
    return Split(main, runs, unlinked)


def tool_use_ids(rec: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """``(id, name, input)`` of each tool call in an assistant record."""
    content = (rec.get("message") or {}).get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") in ("tool_use", "server_tool_use"):
            if isinstance(block.get("id"), str):
                yield block["id"], str(block.get("name") or ""), block.get("input")


def result_ids(rec: dict[str, Any]) -> list[str] | None:
    """The call ids a user record answers, when all it holds is tool results (else ``None``)."""
    content = (rec.get("message") or {}).get("content")
    if not isinstance(content, list) or not content:
        return None
    ids: list[str] = []
    for block in content:
        if not (isinstance(block, dict) and block.get("type") == "tool_result"):
            return None
        ids.append(str(block.get("tool_use_id")))
    return ids


# --- threads ---------------------------------------------------------------------------------


def _parents(
    records: list[Record], *, join_roots: bool = True
) -> tuple[dict[str, Record], dict[str, str | None]]:
    """The records by uuid, and each one's parent within ``records`` (``None`` at a root). A
    compaction boundary continues the history before it: the record its ``logicalParentUuid``
    names. A record whose parent is not in the file (the boundary's included: a compaction
    summarizer's file, a transcript cut short) continues the message before it in the file.

    With ``join_roots`` a message that starts a new root after the first one continues the
    message before it in the file: Claude Code 1.0.x wrote the continuation after an
    auto-compaction as a new root (an ``isCompactSummary`` prompt without
    ``logicalParentUuid``), and plan mode's "Implement the following plan" starts one too. The
    converter writes the first as a fold and the second as a reset (see `is_new_root`)."""
    index: dict[str, Record] = {r[1]["uuid"]: r for r in records if isinstance(r[1].get("uuid"), str)}
    parents: dict[str, str | None] = {}
    previous: str | None = None
    for _, rec in records:
        uuid = rec.get("uuid")
        if not isinstance(uuid, str):
            continue
        parent = rec.get("parentUuid")
        if parent is None and rec.get("subtype") == "compact_boundary":
            logical = rec.get("logicalParentUuid")
            parent = logical if logical in index else previous
        elif isinstance(parent, str) and parent not in index:
            parent = previous  # its parent was not written here (a summarizer's context)
        elif join_roots and is_new_root(rec):
            parent = previous  # None for the first message: the session's own root
        parents[uuid] = parent if isinstance(parent, str) and parent in index else None
        if rec.get("type") in _MESSAGES:
            previous = uuid
    return index, parents


def is_new_root(rec: dict[str, Any]) -> bool:
    """Whether ``rec`` is a message that starts a root of its own (``"parentUuid": null``, no
    compaction boundary naming what it continues): the session's first message, or — later in
    the file — a continuation the CLI wrote as a new root (see `_parents`)."""
    return (
        rec.get("type") in _MESSAGES
        and isinstance(rec.get("uuid"), str)
        and "parentUuid" in rec
        and rec["parentUuid"] is None
        and not isinstance(rec.get("logicalParentUuid"), str)
    )


def _last_message(records: list[Record]) -> Record | None:
    return next((r for r in reversed(records) if r[1].get("type") in _MESSAGES), None)


def _select(
    records: list[Record], index: dict[str, Record], parents: dict[str, str | None], leaf: Record
) -> tuple[set[str], list[str]]:
    """The uuids of the thread ending at ``leaf`` and the roots of the branches leaving it."""
    kept: set[str] = set()
    at: str | None = leaf[1]["uuid"]
    while at is not None and at not in kept:
        kept.add(at)
        at = parents[at]
    reply_ids = {
        rec["message"]["id"]
        for _, rec in (index[u] for u in kept)
        if rec.get("type") == "assistant" and isinstance((rec.get("message") or {}).get("id"), str)
    }
    calls = {cid for u in kept for cid, _, _ in tool_use_ids(index[u][1])}
    roots: list[str] = []
    settled = set(kept)
    changed = True
    while changed:  # records normally follow their parent; a few passes cover the rest
        changed = False
        for _, rec in records:
            uuid = rec.get("uuid")
            if not isinstance(uuid, str) or uuid in settled:
                continue
            parent = parents[uuid]
            if parent is None or parent not in kept:
                continue
            settled.add(uuid)
            changed = True
            if _belongs(rec, reply_ids, calls):
                kept.add(uuid)
                if rec.get("type") == "assistant":
                    reply_ids.add(rec["message"]["id"])
                    calls.update(cid for cid, _, _ in tool_use_ids(rec))
            else:
                roots.append(uuid)
    return kept, roots


def _belongs(rec: dict[str, Any], reply_ids: set[str], calls: set[str]) -> bool:
    kind = rec.get("type")
    if kind not in _MESSAGES:
        return True  # progress, hooks, boundaries: not history, nothing branches on them
    message = rec.get("message") or {}
    if kind == "assistant":
        return message.get("id") in reply_ids  # another line of a reply on the thread
    answered = result_ids(rec)
    return answered is not None and all(a in calls for a in answered)


def _descendants(root: str, parents: dict[str, str | None]) -> set[str]:
    children: dict[str, list[str]] = defaultdict(list)
    for uuid, parent in parents.items():
        if parent is not None:
            children[parent].append(uuid)
    out: set[str] = set()
    stack = [root]
    while stack:
        at = stack.pop()
        if at not in out:
            out.add(at)
            stack.extend(children.get(at, ()))
    return out


def _threads(records: list[Record]) -> tuple[Thread, int]:
    """The thread ending at the last message, its branches (recursively), and the number of
    records that are in none of them."""
    index, parents = _parents(records)
    leaf = _last_message(records)
    if leaf is None:
        return Thread([]), 0
    covered: set[str] = set()

    def build(leaf: Record, root_line: int | None, within: set[str] | None) -> Thread:
        kept, roots = _select(records, index, parents, leaf)
        covered.update(kept)
        thread = Thread([r for r in records if r[1].get("uuid") in kept or _untracked(r)], [], root_line)
        for root in roots:
            if root in covered or (within is not None and root not in within):
                continue  # the parent's own continuation, or a branch already taken
            subtree = _descendants(root, parents)
            branch_leaf = _last_message([r for r in records if r[1].get("uuid") in subtree])
            if branch_leaf is None:
                covered.update(subtree)
                continue
            thread.branches.append(build(branch_leaf, index[root][0], subtree))
        return thread

    main = build(leaf, None, None)
    lost = sum(1 for u in index if u not in covered and index[u][1].get("type") in _MESSAGES)
    return main, lost


def _untracked(record: Record) -> bool:
    """Records outside the tree that still matter to the conversion (none are history)."""
    return not isinstance(record[1].get("uuid"), str) and record[1].get("type") not in _MESSAGES


def _runs(records: list[Record]) -> list[tuple[str | None, list[Record]]]:
    """Sub-agent records grouped into runs: by ``agentId``, else by the root they hang from."""
    _, parents = _parents(records, join_roots=False)  # runs without an agentId: one per root
    groups: dict[str, list[Record]] = {}
    agents: dict[str, str | None] = {}
    for rec in records:
        agent = rec[1].get("agentId")
        if isinstance(agent, str):
            key = f"agent:{agent}"
        else:
            at = rec[1].get("uuid")
            seen: set[str] = set()
            while isinstance(at, str) and at not in seen:
                seen.add(at)
                parent = parents.get(at)
                if parent is None:
                    break
                at = parent
            key = f"root:{at}"
            agent = None
        groups.setdefault(key, []).append(rec)
        agents.setdefault(key, agent)
    return [(agents[k], g) for k, g in groups.items()]
