"""The kept-overflow rule (docs/compaction.md): small user turns are kept by every fold, so over
many folds they pile up until a fold no longer gets the surface under the trigger — silently,
before issue 26. Now the oldest kept messages are folded too, and the fold says so."""

from __future__ import annotations

import asyncio
from typing import Any

from foldlog import Session
from foldlog.compaction import Compactor
from foldlog.compaction.settings import CompactionSettings
from foldlog.compaction.summary import RELEASED_LINE, NoSummary
from foldlog.events import Notice
from foldlog.providers import Scripted

WINDOW = 4_000
TRIGGER = int(WINDOW * 0.8)
MODEL = "deepseek-v4-flash"  # an exact tokenizer: the counts are deterministic


def _session() -> Session:
    s = Session(system="You help with a long task.")
    s.model = MODEL
    return s


def _round(s: Session, n: int) -> None:
    # a user turn under the small-turn limit (kept by every fold), then the assistant's work
    s.add({"role": "user", "content": f"request {n}: " + "please also check this detail " * 40})
    s.add({"role": "assistant", "content": f"done {n}: " + "the work went fine " * 60})


def _fold_many(compactor: Compactor, s: Session, rounds: int) -> list[int]:
    """The surface's tokens right after each fold."""
    after: list[int] = []
    for n in range(rounds):
        _round(s, n)
        folds = s.events.types().count("compaction/summary")
        asyncio.run(compactor.maybe_compact(None))
        if s.events.types().count("compaction/summary") > folds:
            after.append(int(s.token_count(MODEL)))
    return after


def test_repeated_folds_stay_under_the_trigger_and_say_what_they_folded() -> None:
    s = _session()
    events: list[Any] = []
    compactor = Compactor(s, NoSummary(WINDOW), CompactionSettings(window=WINDOW), events.append)
    after = _fold_many(compactor, s, 30)
    assert len(after) >= 5
    assert max(after) < TRIGGER, after  # before: the kept turns pushed each fold higher
    assert not compactor.stuck
    released = [
        e["data"]["released"]
        for e in s.events
        if e["type"] == "compaction/summary" and "released" in e["data"]
    ]
    assert released, "the rule never had to act: the session does not test it"
    for seqs in released:
        assert all(s.events[q]["type"] == "user/message" for q in seqs)
    warnings = [e.message for e in events if isinstance(e, Notice) and e.level == "warn"]
    assert any("kept message(s)" in w and "folded into the summary too" in w for w in warnings)


def test_the_summariser_is_told_it_folds_kept_messages() -> None:
    s = _session()
    for n in range(12):
        _round(s, n)
    summariser = Scripted([{"content": "## Goal\n- the task"}] * 4)
    compactor = Compactor(s, summariser, CompactionSettings(window=WINDOW))
    result = asyncio.run(compactor.compact("manual", force=True))
    assert result is not None and result.released_seqs
    assert result.preview is not None and result.preview.released == len(result.released_seqs)
    assert "kept messages folded" in result.preview.describe()
    [request] = summariser.requests
    assert RELEASED_LINE in str(request.messages[-1]["content"])


def test_without_a_window_nothing_is_released() -> None:
    s = _session()
    for n in range(12):
        _round(s, n)
    preview = Compactor(s, NoSummary(None), CompactionSettings(window=0)).plan(force=True)
    assert preview.released == 0
