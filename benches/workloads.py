"""Benchmark workloads: foldlog logs recorded from the real transcripts in the shared corpus.

The corpus (`$FOLDLOG_SHARED/corpus`, else `<repo>/../shared/corpus`) is read in place, never
copied into the repository. Conversations (τ-bench OpenAI message arrays and Claude Code sessions)
are recorded through `foldlog.Session` with the full lifecycle — turn/start, step/start,
user/message, assistant/message, tool/call, tool/result, step/end, turn/end — and repeated until
the log reaches the stated size. Built logs are cached on disk outside the repository
(`$FOLDLOG_BENCH_CACHE`, else `<tmp>/foldlog-bench-cache`), keyed by `WORKLOAD_VERSION`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
# bump when the recording changes so stale cached logs are rebuilt
WORKLOAD_VERSION = 2


def shared_dir() -> Path:
    return Path(os.environ.get("FOLDLOG_SHARED") or REPO.parent / "shared")


def corpus_dir() -> Path:
    return shared_dir() / "corpus"


def cache_dir() -> Path:
    d = Path(os.environ.get("FOLDLOG_BENCH_CACHE") or Path(tempfile.gettempdir()) / "foldlog-bench-cache")
    d.mkdir(parents=True, exist_ok=True)
    return d


Message = dict[str, Any]


# --- converters (small, for the bench only; `foldlog.interchange` is the library's own) --------


def tau_bench_conversations() -> Iterator[list[Message]]:
    """τ-bench trajectories: OpenAI chat message arrays, one per task."""
    data = json.loads((corpus_dir() / "tau-bench" / "gpt-4o-airline.json").read_text())
    for task in data:
        traj = task.get("traj") or []
        if traj:
            yield [dict(m) for m in traj]


def _text_of_blocks(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for b in content or []:
        if isinstance(b, dict) and b.get("type") == "text":
            parts.append(str(b.get("text", "")))
    return "\n".join(parts)


def claude_code_conversations() -> Iterator[list[Message]]:
    """Claude Code session files: assistant records merged by `message.id` (one API response is
    split over several lines), `tool_use` blocks as OpenAI tool calls, `tool_result` blocks as tool
    messages; progress, snapshots and meta records are not model history and are skipped."""
    for path in sorted((corpus_dir() / "claude-code-spotter").glob("*.jsonl")):
        out: list[Message] = []
        last_id: str | None = None
        for line in path.read_text().splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            kind = rec.get("type")
            msg = rec.get("message") or {}
            if kind == "assistant":
                content = msg.get("content") or []
                if isinstance(content, str):
                    content = [{"type": "text", "text": content}]
                if msg.get("id") != last_id or not out or out[-1]["role"] != "assistant":
                    out.append({"role": "assistant", "content": ""})
                    last_id = msg.get("id")
                cur = out[-1]
                for b in content:
                    if b.get("type") == "text" and b.get("text"):
                        cur["content"] = (cur["content"] + "\n" if cur["content"] else "") + b["text"]
                    elif b.get("type") == "tool_use":
                        args = json.dumps(b.get("input") or {}, ensure_ascii=False)
                        call = {
                            "id": b["id"],
                            "type": "function",
                            "function": {"name": b["name"], "arguments": args},
                        }
                        cur.setdefault("tool_calls", []).append(call)
            elif kind == "user" and not rec.get("isMeta"):
                last_id = None
                content = msg.get("content")
                if isinstance(content, list) and any(b.get("type") == "tool_result" for b in content):
                    for b in content:
                        if b.get("type") == "tool_result":
                            out.append(
                                {
                                    "role": "tool",
                                    "tool_call_id": b.get("tool_use_id"),
                                    "content": _text_of_blocks(b.get("content")),
                                    "is_error": bool(b.get("is_error")),
                                }
                            )
                elif content:
                    out.append({"role": "user", "content": _text_of_blocks(content)})
        names = {c["id"]: c["function"]["name"] for m in out for c in m.get("tool_calls", [])}
        for m in out:
            if m["role"] == "tool":
                m["name"] = names.get(m["tool_call_id"], "")
        # keep only results whose call is in the file, and calls whose result is (a pairable history)
        answered = {m["tool_call_id"] for m in out if m["role"] == "tool"}
        for m in out:
            if "tool_calls" in m:
                m["tool_calls"] = [c for c in m["tool_calls"] if c["id"] in answered]
                if not m["tool_calls"]:
                    del m["tool_calls"]
        yield [
            m
            for m in out
            if (m["role"] != "tool" or m["tool_call_id"] in names)
            and (m["role"] != "assistant" or m["content"] or m.get("tool_calls"))
        ]


def well_paired(conv: list[Message]) -> list[Message]:
    """Keep the calls answered right after their assistant message and the results that answer
    them, so the recorded log is well formed (the load normalizer has nothing to repair)."""
    out: list[Message] = []
    i = 0
    while i < len(conv):
        m = conv[i]
        if m["role"] == "tool":
            i += 1  # an orphan result: its call is not right before it
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            j = i + 1
            while j < len(conv) and conv[j]["role"] == "tool":
                j += 1
            results = conv[i + 1 : j]
            answered = {r.get("tool_call_id") for r in results}
            calls = [c for c in m["tool_calls"] if c["id"] in answered and c["function"].get("name")]
            ids = {c["id"] for c in calls}
            m = {**m, "tool_calls": calls} if calls else {k: v for k, v in m.items() if k != "tool_calls"}
            if m.get("content") or calls:
                out.append(m)
            seen: set[str] = set()
            for r in results:
                if r.get("tool_call_id") in ids and r["tool_call_id"] not in seen:
                    seen.add(r["tool_call_id"])
                    out.append(r)
            i = j
            continue
        out.append(m)
        i += 1
    return out


def corpus_conversations() -> list[list[Message]]:
    convs = (*tau_bench_conversations(), *claude_code_conversations())
    return [w for w in (well_paired(c) for c in convs) if w]


# --- recording --------------------------------------------------------------------------------


class Recorder:
    """Records chat messages into a `foldlog.Session` with the agent loop's event lifecycle."""

    def __init__(self, session: Any) -> None:
        self.s = session
        self.turn = 0
        self.step = 0
        self.in_turn = False
        self.in_step = False
        self.calls: dict[str, int] = {}

    def _end_step(self) -> None:
        if self.in_step:
            self.s.append_event("step/end", {"turn": self.turn, "step": self.step})
            self.in_step = False

    def end_turn(self) -> None:
        self._end_step()
        if self.in_turn:
            self.s.append_event("turn/end", {"turn": self.turn, "reason": {"kind": "completed"}})
            self.in_turn = False

    def _start_turn(self) -> None:
        self.turn += 1
        self.step = 0
        self.in_turn = True
        self.s.append_event("turn/start", {"turn": self.turn})

    def record(self, m: Message, suffix: str) -> None:
        role = m["role"]
        if role == "system":
            self.s.add({"role": "system", "content": m.get("content") or ""})
        elif role == "user":
            self.end_turn()
            self._start_turn()
            self.s.add({"role": "user", "content": m.get("content") or ""})
        elif role == "assistant":
            if not self.in_turn:
                self._start_turn()
            self._end_step()
            self.step += 1
            self.in_step = True
            self.s.append_event("step/start", {"turn": self.turn, "step": self.step})
            msg: Message = {"role": "assistant", "content": m.get("content") or ""}
            calls = []
            for c in m.get("tool_calls") or []:
                fn = c["function"]
                calls.append(
                    {
                        "id": c["id"] + suffix,
                        "type": "function",
                        "function": {"name": fn["name"], "arguments": fn.get("arguments") or ""},
                    }
                )
            if calls:
                msg["tool_calls"] = calls
            self.s.add(msg)
            for c in calls:
                data = {
                    "turn": self.turn,
                    "step": self.step,
                    "callId": c["id"],
                    "name": c["function"]["name"],
                    "arguments": c["function"]["arguments"],
                }
                self.calls[c["id"]] = self.s.append_event("tool/call", data)
        elif role == "tool":
            call_id = str(m.get("tool_call_id")) + suffix
            data = {
                "turn": self.turn,
                "step": self.step,
                "message": {
                    "role": "tool",
                    "toolCallId": call_id,
                    "toolName": m.get("name") or "",
                    "content": m.get("content") if isinstance(m.get("content"), str) else "",
                    "isError": bool(m.get("is_error")),
                },
            }
            src = self.calls.pop(call_id, None)
            self.s.append_event(
                "tool/result", data, surface_op="append", source_event_seqs=None if src is None else [src]
            )


@dataclass(frozen=True)
class Workload:
    name: str
    path: Path
    events: int
    bytes: int
    source: str
    #: the surface messages recorded, when the builder counts them
    messages: int | None = None

    def describe(self) -> str:
        msgs = f"{self.messages:,} messages, " if self.messages else ""
        return f"{msgs}{self.events:,} events, {self.bytes / 1e6:.1f} MB ({self.source})"


SOURCE = "τ-bench gpt-4o-airline + Claude Code spotter sessions, repeated"


def build_log(name: str, *, min_bytes: int = 0, min_events: int = 0) -> Workload:
    """Record the corpus into one session until it holds ``min_bytes`` and ``min_events``; cached."""
    path = cache_dir() / f"{name}-v{WORKLOAD_VERSION}-{min_bytes}-{min_events}.jsonl"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("bytes") == path.stat().st_size:
            return Workload(name, path, info["events"], info["bytes"], SOURCE)
    from foldlog import Session

    convs = corpus_conversations()
    s = Session(id=f"bench-{name}")
    rec = Recorder(s)
    rec.record({"role": "system", "content": "You are a careful agent. Use the tools."}, "")
    size = 0
    rep = 0
    while size < min_bytes or len(s) < min_events:
        for conv in convs:
            for m in conv:
                if m["role"] != "system":
                    rec.record(m, f"~{rep}")
            rec.end_turn()
        rep += 1
        size = len(s._core.to_bytes())
    tmp = path.with_suffix(".tmp")
    s.save(tmp)
    tmp.replace(path)
    n = len(s)
    meta.write_text(json.dumps({"events": n, "bytes": path.stat().st_size, "repeats": rep}))
    return Workload(name, path, n, path.stat().st_size, SOURCE)


def log_100mb() -> Workload:
    """B1: a ~100 MB log."""
    return build_log("load", min_bytes=100_000_000)


SMALL_SOURCE = "τ-bench + Claude Code messages cut to ~250 bytes, repeated"


TINY_SOURCE = "τ-bench + Claude Code messages with texts cut under 100 bytes, repeated"


@dataclass(frozen=True)
class Cut:
    """How short `small_conversations` cuts each message (characters; ``max_bytes``: also under
    that many UTF-8 bytes, for texts that must stay under a size whatever their script)."""

    text: int
    args: int
    result: int
    max_bytes: int | None = None


#: B1's small workload: ~250 bytes an event line
SMALL_CUT = Cut(text=110, args=90, result=100)
#: B1's tiny workload: every text (user text, tool call arguments, tool result) under 100 bytes
TINY_CUT = Cut(text=90, args=90, result=90, max_bytes=99)


def _short(text: str, limit: int, max_bytes: int | None = None) -> str:
    """The first ``limit`` characters of ``text``, cut at a space when there is one (and, with
    ``max_bytes``, shortened further until its UTF-8 fits)."""
    if len(text) > limit:
        cut = text.rfind(" ", 0, limit)
        text = text[: cut if cut > limit // 2 else limit]
    while max_bytes is not None and len(text.encode()) > max_bytes:
        text = text[:-1]
    return text


def small_conversations(cut: Cut = SMALL_CUT) -> list[list[Message]]:
    """The corpus conversations with every message cut short: user texts and tool results to
    their first words, tool calls kept when their arguments are short."""
    out = []
    for conv in corpus_conversations():
        small: list[Message] = []
        for m in conv:
            role = m["role"]
            raw = m.get("content")
            content = raw if isinstance(raw, str) else ""
            if role in ("user", "system"):
                small.append({"role": role, "content": _short(content, cut.text, cut.max_bytes)})
            elif role == "assistant":
                calls = [
                    c
                    for c in m.get("tool_calls") or []
                    if _short(args := c["function"].get("arguments") or "", cut.args, cut.max_bytes) == args
                ]
                text = "" if calls else _short(content, cut.text, cut.max_bytes)
                msg: Message = {"role": "assistant", "content": text}
                if calls:
                    msg["tool_calls"] = calls[:1]
                small.append(msg)
            elif role == "tool":
                small.append({**m, "content": _short(content, cut.result, cut.max_bytes)})
        out.append(well_paired(small))
    return [c for c in out if c]


def build_small_log(min_messages: int, name: str = "small", cut: Cut = SMALL_CUT) -> Workload:
    """B1's second and third workloads: ≥ ``min_messages`` messages cut short by ``cut`` (user
    text, assistant tool call, tool result), recorded with the agent loop's lifecycle events like
    `build_log`; cached."""
    source = SMALL_SOURCE if cut == SMALL_CUT else TINY_SOURCE
    path = cache_dir() / f"{name}-v{WORKLOAD_VERSION}-{min_messages}.jsonl"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("bytes") == path.stat().st_size:
            return Workload(name, path, info["events"], info["bytes"], source, info["messages"])
    from foldlog import Session

    convs = small_conversations(cut)
    s = Session(id=f"bench-{name}")
    rec = Recorder(s)
    rec.record({"role": "system", "content": "You are a careful agent. Use the tools."}, "")
    messages = 1
    rep = 0
    while messages < min_messages:
        for conv in convs:
            for m in conv:
                if m["role"] != "system":
                    rec.record(m, f"~{rep}")
                    messages += 1
            rec.end_turn()
        rep += 1
    tmp = path.with_suffix(".tmp")
    s.save(tmp)
    tmp.replace(path)
    n = len(s)
    size = path.stat().st_size
    meta.write_text(json.dumps({"events": n, "bytes": size, "messages": messages, "repeats": rep}))
    return Workload(name, path, n, size, source, messages)


def log_small_messages() -> Workload:
    """B1, second workload: ≥ 400k small messages of ~250 bytes."""
    return build_small_log(400_000)


def log_tiny_messages() -> Workload:
    """B1, third workload: ≥ 400k tiny messages, every text under 100 bytes (the shape of chat and
    tool-heavy agents: user text, tool call, tool result)."""
    return build_small_log(400_000, "tiny", TINY_CUT)


def log_100k() -> Workload:
    """B1r/B2: a log of ≥100k events."""
    return build_log("events", min_events=100_000)


def with_token_counts(w: Workload, model: str) -> Workload:
    """``w`` with every event's token count for ``model``'s tokenizer kept in its envelope
    (``"tokens"``), as a session that flushed with its model set writes them; cached."""
    from foldlog import Session

    path = cache_dir() / f"{w.path.stem}-tokens-{model}.jsonl"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("bytes") == path.stat().st_size and info.get("source_bytes") == w.bytes:
            return Workload(f"{w.name}+tokens", path, info["events"], info["bytes"], w.source)
    s = Session.load(w.path)
    s.model = model
    s.token_count()  # counts every surface event and keeps the count with it
    tmp = path.with_suffix(".tmp")
    s.save(tmp)
    tmp.replace(path)
    n = len(s)
    size = path.stat().st_size
    meta.write_text(json.dumps({"events": n, "bytes": size, "source_bytes": w.bytes}))
    return Workload(f"{w.name}+tokens", path, n, size, w.source)
