"""Tier 1 over a few corpus sessions with the packaged local model as the reader: each session
folded mechanically at the largest window that saves 50% (as `probe_corpus`) when that window
fits the reader's (`MAX_WINDOW`), a few probes per category, read on the folded surface and on
the unfolded baseline, ``R`` replicates.

The tier 1 figures of docs/compaction-benchmark.md come from here (slow: minutes per session)::

    FOLDLOG_SHARED=../shared .venv/bin/python -m tests.compaction.reader_corpus [SESSIONS] [CAP] [R]
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from typing import Any

from foldlog import Session
from foldlog.compaction import Compactor
from foldlog.compaction.model_cache import ModelCache
from foldlog.compaction.probes import SCORED, probes_for_plan
from foldlog.compaction.reader import Recall, read
from foldlog.compaction.settings import CompactionSettings
from foldlog.compaction.summary import NoSummary
from tests.compaction.probe_corpus import corpus_reports

#: folds at windows up to this fit the packaged model's 8,192-token window whole (both surfaces
#: of a larger one would be cut to the same tail, and read the same)
MAX_WINDOW = 6_000


async def fold_and_read(
    s: Session, settings: CompactionSettings, reader: Any, cap: int, replicates: int, cache: ModelCache
) -> tuple[Recall, Recall]:
    copy = Session.from_bytes(s.to_bytes(), source=f"{s.id} (reader)")
    copy.model = s.model
    summariser = NoSummary(settings.window)
    compactor = Compactor(copy, summariser, settings)
    preview = compactor.plan(force=True)
    probes = probes_for_plan(copy, preview, cap)
    unfolded = copy.derive_messages()
    await compactor.compact("manual", force=True)
    await summariser.aclose()
    folded = await read(
        reader, probes, copy.derive_messages(), cache=cache, per_prompt=8, replicates=replicates
    )
    base = await read(reader, probes, unfolded, cache=cache, per_prompt=8, replicates=replicates)
    return folded, base


def main(sessions: int = 2, cap: int = 2, replicates: int = 3) -> None:
    from foldlog.providers.local.provider import LocalLlama

    reader = LocalLlama()
    cache = ModelCache(None)
    asked: Counter[str] = Counter()
    right: Counter[str] = Counter()
    base_right: Counter[str] = Counter()
    started = time.monotonic()
    done = 0
    for name, s, settings, report in corpus_reports(0.5):
        if done == sessions:
            break
        if settings.window > MAX_WINDOW:  # the folded surface would not fit the reader's window
            continue
        if not any(p.category in SCORED for p in report.probes):  # nothing for a reader to answer
            continue
        folded, base = asyncio.run(fold_and_read(s, settings, reader, cap, replicates, cache))
        done += 1
        cut = " (baseline cut to the window)" if base.cut else ""
        print(f"{name}: window {settings.window:,}, saved {report.saved:.0%}{cut}")
        for c in SCORED:
            n = folded.asked.get(c, 0)
            if n:
                asked[c] += n * replicates
                right[c] += sum(r.get(c, 0) for r in folded.right)
                base_right[c] += sum(r.get(c, 0) for r in base.right)
                print(f"  {c}: recall {folded.shares(c)} baseline {base.shares(c)}")
    print(f"{done} sessions, {cache.misses} calls, {time.monotonic() - started:.0f} s")
    for c in SCORED:
        if asked[c]:
            print(f"{c}: recall {right[c] / asked[c]:.0%}, baseline {base_right[c] / asked[c]:.0%}")
    asyncio.run(reader.aclose())


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
