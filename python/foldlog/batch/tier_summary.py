"""compact-eval's summary of tiers 1 and 2 (a reader's recall, a judge's scores), per strategy.

Recall is the mean over the folds that have one of the rows' ``recall_<c>`` (each already the
mean over replicates), the baseline likewise, the loss their difference in points, and the
spread the mean over folds of ``recall_spread_<c>`` (max − min over replicates of recall −
baseline). A category whose baseline is under 50% is reported as not measurable by this reader:
a reader that cannot answer from the whole history cannot show what a fold lost.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from foldlog.compaction.judge import DIMENSIONS
from foldlog.compaction.probes import SCORED
from foldlog.compaction.reader import MIN_BASELINE


def _mean(values: Sequence[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _col(group: Sequence[Mapping[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in group if r.get(key) is not None]


def _groups(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Mapping[str, Any]]]:
    from foldlog.batch.summary import strategy_of

    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(strategy_of(r), []).append(r)
    return groups


def recall_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per strategy and category: folds read, recall, baseline, loss (points), spread (points)
    and whether this reader can measure loss there (baseline ≥ 50%)."""
    out: list[dict[str, Any]] = []
    for name, group in sorted(_groups(rows).items()):
        for c in SCORED:
            pairs = [
                (float(r[f"recall_{c}"]), float(r[f"recall_base_{c}"]))
                for r in group
                if r.get(f"recall_{c}") is not None and r.get(f"recall_base_{c}") is not None
            ]
            if not pairs:
                continue
            recall = statistics.fmean(p[0] for p in pairs)
            base = statistics.fmean(p[1] for p in pairs)
            spread = _mean(_col(group, f"recall_spread_{c}"))
            measurable = base >= MIN_BASELINE
            out.append(
                {
                    "strategy": name,
                    "category": c,
                    "folds": len(pairs),
                    "recall_pct": round(100 * recall, 2),
                    "recall_base_pct": round(100 * base, 2),
                    "loss_points": round(100 * (base - recall), 2) if measurable else None,
                    "spread_points": round(100 * spread, 2) if spread is not None else None,
                    "measurable": measurable,
                    "baseline_cut": sum(1 for r in group if r.get("baseline_cut")),
                    "folded_cut": sum(1 for r in group if r.get("folded_cut")),
                }
            )
    return out


def judge_summary(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per strategy: folds judged and the mean of each ``judge_<dimension>`` and of
    ``judge_overall``."""
    out: list[dict[str, Any]] = []
    for name, group in sorted(_groups(rows).items()):
        overall = _col(group, "judge_overall")
        if not overall:
            continue
        s: dict[str, Any] = {"strategy": name, "folds": len(overall)}
        for d in (*DIMENSIONS, "overall"):
            m = _mean(_col(group, f"judge_{d}"))
            s[f"judge_{d}"] = round(m, 2) if m is not None else None
        out.append(s)
    return out


def tier_lines(summary: Mapping[str, Any]) -> list[str]:
    """The text of both: a loss only where the baseline can show one, else why not."""
    lines: list[str] = []
    recall = summary.get("recall") or []
    if recall:
        lines.append("reader recall (folded vs the unfolded baseline, mean over replicates):")
    for s in recall:
        head = f"{s['strategy']}/{s['category']}"
        text = f"recall {s['recall_pct']:.0f}%, baseline {s['recall_base_pct']:.0f}%"
        if s["measurable"]:
            spread = s["spread_points"]
            text += f", loss {s['loss_points']:.1f} points" + (
                "" if spread is None else f" (spread over replicates {spread:.1f})"
            )
        else:
            text += ": baseline under 50%, this reader cannot measure what the fold lost here"
        if s["baseline_cut"]:
            text += f"; baseline cut to the reader's window in {s['baseline_cut']} fold(s)"
        if s.get("folded_cut"):
            text += (
                f"; the folded surface too in {s['folded_cut']} fold(s): "
                "the reader's window is smaller than the agent's"
            )
        lines.append(f"  {head:>24}  {text}")
    judged = summary.get("judge") or []
    if judged:
        lines.append("judge scores (0-5):")
    for s in judged:
        cells = "  ".join(
            f"{d} {s[f'judge_{d}']:.2f}" for d in (*DIMENSIONS, "overall") if s[f"judge_{d}"] is not None
        )
        lines.append(f"  {s['strategy']:>24}  {cells}")
    return lines


__all__ = ["judge_summary", "recall_summary", "tier_lines"]
