"""Tier 0 over the shared corpus: every Claude Code and Codex transcript, imported by foldlog's
importers, folded once at the largest window that saves a given share of the surface, by a
strategy (default ``mechanical``; ``mask`` and ``hybrid`` compact at the trigger, not forced).

The figures of docs/compaction-benchmark.md come from here::

    FOLDLOG_SHARED=../shared .venv/bin/python -m tests.compaction.probe_corpus [STRATEGY ...]
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator

from foldlog import Session
from foldlog.compaction import SurvivalReport, probe_survival
from foldlog.compaction.probes import SCORED
from foldlog.compaction.settings import STRATEGIES, CompactionSettings, Strategy
from tests.compaction.corpus_histories import imported_sessions

#: windows tried, as shares of the session's tokens, largest first (at least 2,000 tokens)
FRACTIONS = (1.0, 0.75, 0.5, 0.33, 0.25, 0.2, 0.15, 0.1)


def fold_saving(
    s: Session, share: float, strategy: Strategy = "mechanical"
) -> tuple[CompactionSettings, SurvivalReport] | None:
    """The largest window of `FRACTIONS` whose compaction by ``strategy`` (forced for the folds;
    at the trigger for ``mask`` and ``hybrid``, so hybrid folds only when masking is not enough)
    saves at least ``share`` of the surface (tokens counted as the session's own model), and its
    report; ``None`` when none does (a session too short to fold that much)."""
    s.model = s.counting_model(None)
    tokens = int(s.token_count(s.model))
    force = strategy not in ("mask", "hybrid")
    for frac in FRACTIONS:
        settings = CompactionSettings(window=max(int(tokens * frac), 2_000), strategy=strategy)
        report = probe_survival(s, settings, force=force)
        if report.folded and report.saved >= share:
            return settings, report
    return None


def corpus_reports(
    share: float, strategy: Strategy = "mechanical"
) -> Iterator[tuple[str, Session, CompactionSettings, SurvivalReport]]:
    """``(name, session, settings, report)`` for every Claude Code / Codex session of the corpus
    that folds by ``share``."""
    for name, s in imported_sessions():
        if name.startswith("openai:"):
            continue
        found = fold_saving(s, share, strategy)
        if found is not None:
            yield name, s, *found


def totals(share: float, strategy: Strategy = "mechanical") -> tuple[Counter[str], float, float]:
    """Summed columns (``sessions`` too) and the lowest and highest share saved."""
    out: Counter[str] = Counter()
    saved: list[float] = []
    for _name, _s, _settings, report in corpus_reports(share, strategy):
        out["sessions"] += 1
        out.update(report.columns())
        saved.append(report.saved)
    return out, min(saved, default=0.0), max(saved, default=0.0)


def main() -> None:
    started = time.perf_counter()
    chosen = [a for a in sys.argv[1:] if a in STRATEGIES] or ["mechanical"]
    for strategy in chosen:
        _report(strategy)
    print(f"{time.perf_counter() - started:.1f} s")


def _report(strategy: Strategy) -> None:
    for share in (0.5, 0.7):
        t, low, high = totals(share, strategy)
        print(f"{strategy}, saving >= {share:.0%}: {t['sessions']} sessions, saved {low:.0%}-{high:.0%}")
        for c in SCORED:
            n, kept = t[f"probes_{c}"], t[f"survived_{c}"]
            pct = f" ({100 * kept / n:.1f}%)" if n else ""
            print(f"  {c:>10}: {kept}/{n} survived{pct}")


if __name__ == "__main__":
    main()
