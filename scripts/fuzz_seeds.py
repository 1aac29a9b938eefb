"""Seed corpora for the fuzz targets, built from the shared corpus (kept out of git).

Usage: python scripts/fuzz_seeds.py OUT_DIR   (OUT_DIR/<target>/ gets the seeds)

Logs come from real transcripts through foldlog's importers, cut into small prefixes (libFuzzer
mutates small inputs fastest) and damaged ones; tool-call arguments seed the JSON closer; the
planner gets real histories in its byte encoding; the SSE target gets raw recorded streams; the
message target gets the derived messages of those transcripts as JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

from foldlog import Session
from foldlog.interchange import convert
from foldlog.interchange.writer import write_conversation

SOURCES = [
    ("claude-code", "claude-code-spotter/short.jsonl"),
    ("claude-code", "claude-code-spotter/tool_heavy.jsonl"),
    ("claude-code", "claude-code-spotter/subagent.jsonl"),
    ("codex", "codex-localpush/rollout-2026-02-23T12-40-23-019c8a4c-ed82-79a1-aa28-7738fc5ab61a.jsonl"),
    ("openai", "tau-bench/gpt-4o-airline.json"),
]
SSE_DIRS = ["openai-python-snapshots", "langchaingo-httprr", "pydantic-ai-cassettes/extracted"]
MAX_SEED = 8_192  # bytes: libFuzzer's inputs stay small


def save(out: Path, target: str, data: bytes) -> None:
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()[:16]).write_bytes(data)


def logs(corpus: Path) -> list[bytes]:
    found = []
    for fmt, rel in SOURCES:
        path = corpus / rel
        if not path.exists():
            continue
        for conv in convert(fmt, path)[:10]:
            s = Session()
            write_conversation(conv, s)
            found.append(s._core.to_bytes())
    return found


def prefixes(log: bytes) -> list[bytes]:
    lines = log.splitlines(keepends=True)
    out = []
    for k in (4, 8, 16, 32):
        p = b"".join(lines[:k])
        if len(p) <= MAX_SEED:
            out.append(p)
            out.append(p[: len(p) - len(lines[k - 1]) // 2] if k <= len(lines) else p)  # torn tail
    return out


def plan_bytes(messages: list[dict[str, Any]]) -> bytes:
    """The planner target's encoding (foldlog_core::fuzzing::plan_input)."""
    out = bytearray([1, 0, 40, 0x10, 0, 2, 0x05, 0xDC, 0x01, 0x90, 16])  # window 4000, tail 4096
    calls: dict[str, int] = {}
    assistants: list[int] = []
    for i, m in enumerate(messages):
        role = {"system": 0, "user": 1, "assistant": 2, "tool": 3}.get(str(m.get("role")), 1)
        text = json.dumps(m.get("content"))
        tokens = min(len(text) // 4 + 4, 0xFFFF)
        kind, link = role, 0
        if role == 1 and "<compaction-summary>" in text:
            kind |= 4
        if role == 3:
            kind |= 16 if text.lstrip('"').startswith(("error:", "blocked:")) else 0
            caller = calls.get(str(m.get("tool_call_id")))
            if caller is not None:
                kind |= 64
                link = min(len(assistants) - 1 - assistants.index(caller), 255)
        if role == 2:
            assistants.append(i)
            for c in m.get("tool_calls") or []:
                calls[str(c.get("id"))] = i
        out += bytes([kind, tokens >> 8, tokens & 0xFF, link])
    return bytes(out)


def main() -> None:
    out = Path(sys.argv[1])
    corpus = Path(os.environ.get("FOLDLOG_SHARED", "../shared")) / "corpus"
    for log in logs(corpus):
        for p in prefixes(log):
            save(out, "reader", p)
            save(out, "load_normalizer", p)
            save(out, "session_load", p)
        s = Session.from_bytes(log)
        msgs = [dict(m) for m in s.derive_messages()]
        save(out, "planner", plan_bytes(msgs[:300]))
        for m in msgs:
            for c in m.get("tool_calls") or []:
                args = str(c.get("function", {}).get("arguments", ""))
                if 0 < len(args) <= 1_024:
                    save(out, "json_close", args.encode())
            if len(json.dumps(m)) <= 2_048:
                save(out, "session_add", json.dumps(m).encode())
                save(out, "message", json.dumps(m).encode())
    for d in SSE_DIRS:
        for f in sorted((corpus / d).rglob("*"))[:40]:
            if f.is_file() and f.stat().st_size <= 16_384 and b"data:" in f.read_bytes():
                save(out, "sse", f.read_bytes())
    for t in sorted(p.name for p in out.iterdir()):
        print(f"{t}: {len(list((out / t).iterdir()))} seeds")


if __name__ == "__main__":
    main()
