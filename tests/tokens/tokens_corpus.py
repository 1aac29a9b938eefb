"""Texts of the shared corpus for the token tests and benchmarks (every file contributes).

Each file's strings are texts: every JSON string value of JSON / JSONL / .traj files and of
``data:`` lines of SSE / chunk files, and paragraphs of everything else (markdown, YAML, …).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    return Path(os.environ.get("FOLDLOG_SHARED") or REPO.parent / "shared")


def corpus_files() -> list[Path]:
    root = shared_dir() / "corpus"
    return sorted(p for p in root.rglob("*") if p.is_file())


def _strings(value: object) -> Iterator[str]:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if v:
                yield v
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def _json_lines(raw: str) -> Iterator[str]:
    for line in raw.splitlines():
        body = line.removeprefix("data: ").strip()
        if not body or body == "[DONE]":
            continue
        try:
            yield from _strings(json.loads(body))
        except json.JSONDecodeError:
            yield line


def file_texts(path: Path) -> list[str]:
    """Distinct texts of one corpus file, in first-seen order."""
    try:
        raw = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    texts: Iterator[str]
    if path.suffix in (".json", ".traj"):
        try:
            texts = _strings(json.loads(raw))
        except json.JSONDecodeError:
            texts = _json_lines(raw)
    elif path.suffix in (".jsonl", ".sse") or path.name.endswith(".chunks.txt"):
        texts = _json_lines(raw)
    else:
        texts = (p for p in raw.split("\n\n") if p)
    return list(dict.fromkeys(texts))


def sample(texts: list[str], budget: int) -> list[str]:
    """A deterministic spread of ``texts`` holding about ``budget`` characters (all if smaller)."""
    total = sum(map(len, texts))
    if total <= budget:
        return texts
    step = total / budget
    out, acc, next_take = [], 0.0, 0.0
    for t in texts:
        if acc >= next_take:
            out.append(t)
            next_take += step * len(t)
        acc += len(t)
    return out
