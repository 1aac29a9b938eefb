"""Shared fixtures: where the corpus and seeds are, and the seed's example log."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from foldlog import Session

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("FOLDLOG_SHARED") or REPO.parent / "shared")


def shared_path(*parts: str) -> Path:
    """A file under ../shared (the corpus, seeds and specs every checkout has beside it)."""
    p = SHARED.joinpath(*parts)
    if not p.exists():
        raise FileNotFoundError(
            f"{p} is missing: tests read the shared corpus from ../shared (or $FOLDLOG_SHARED)"
        )
    return p


def seed_example_log() -> str:
    """The example JSONL log in the seed document 003 (version 0, no header)."""
    text = shared_path("seeds", "003_219a963383af4f83.txt").read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.startswith('{"type":')]
    assert len(lines) == 10, "the seed's example log has 10 events"
    return "\n".join(lines) + "\n"


@pytest.fixture
def seed_log(tmp_path: Path) -> Path:
    p = tmp_path / "seed.jsonl"
    p.write_text(seed_example_log(), encoding="utf-8")
    return p


@pytest.fixture
def session() -> Session:
    """A fresh in-memory session with a system prompt (the agent and tool tests run on it)."""
    return Session(system="You are a test assistant.")
