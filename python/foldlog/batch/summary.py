"""A job's summary (totals of the ``stats`` rows; savings by grid point for ``compact-eval``), its
text table, and compact-eval's chart (PNG, matplotlib)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigError

STATS_TOTALS = (
    "events",
    "turns",
    "steps",
    "tool_calls",
    "tool_results",
    "tokens",
    "prompt_tokens",
    "completion_tokens",
    "compactions",
)


#: compact-eval --probes (tier 0, docs/compaction-benchmark.md)
PROBE_CATEGORIES = ("artifact", "error", "constraint", "identifier")
#: the strategy of rows without a ``strategy`` column (the fold compact-eval always ran)
DEFAULT_STRATEGY = "mechanical"
PROBE_COLUMNS = tuple(f"{k}_{c}" for c in PROBE_CATEGORIES for k in ("probes", "survived"))


def summarize(job: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over the rows; errors counted, not summed."""
    ok = [r for r in rows if r.get("error") is None]
    summary: dict[str, Any] = {
        "job": job,
        "sources": len({r["source"] for r in rows}),
        "rows": len(rows),
        "errors": len(rows) - len(ok),
    }
    if job == "stats":
        summary["sessions"] = len(ok)
        for key in STATS_TOTALS:
            summary[key] = sum(int(r.get(key) or 0) for r in ok)
        costs = [r for r in ok if r.get("cost") is not None]
        summary["cost"] = round(sum(float(r["cost"]) for r in costs), 6)
        summary["priced_sessions"] = len(costs)
        summary["currencies"] = sorted({str(r["currency"]) for r in costs})
        summary["needs_repair"] = sum(1 for r in ok if r.get("needs_repair"))
        summary["unfinished_compactions"] = sum(int(r.get("unfinished_compactions") or 0) for r in ok)
    elif job == "compact-eval":
        summary["points"] = by_point(ok)
        summary["strategies"] = by_strategy(ok)
        from foldlog.batch.tier_summary import judge_summary, recall_summary

        summary["recall"] = recall_summary(ok)  # tier 1 (--reader); empty without one
        summary["judge"] = judge_summary(ok)  # tier 2 (--judge)
    else:
        summary["sessions"] = len(ok)
    return summary


def strategy_of(row: Mapping[str, Any]) -> str:
    """The row's fold strategy; rows written before strategies existed were ``mechanical``."""
    return str(row.get("strategy") or DEFAULT_STRATEGY)


def acted(row: Mapping[str, Any]) -> bool:
    """Whether the row's strategy changed the surface: messages folded or tool results masked."""
    return int(row.get("folded") or 0) > 0 or int(row.get("masked") or 0) > 0


def by_strategy(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per strategy, over every grid point: sessions, folds (or masks), tokens saved (% of the surface
    before), and with ``--probes`` survival per category (%); with a reader the mean recall and
    baseline recall per category (%, over the folds that have one). What the chart plots."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        groups.setdefault(strategy_of(r), []).append(r)
    out = []
    for name in sorted(groups):
        group = groups[name]
        before = sum(int(r.get("tokens_before") or 0) for r in group)
        after = sum(int(r.get("tokens_after") or 0) for r in group)
        s: dict[str, Any] = {
            "strategy": name,
            "sessions": len(group),
            "folded": sum(1 for r in group if acted(r)),
            "tokens_before": before,
            "tokens_after": after,
            "saved_pct": round(100.0 * (before - after) / before, 2) if before else 0.0,
        }
        # the share saved where the strategy acted: where the probes come from (the chart's x)
        folds = [r for r in group if acted(r)]
        f_before = sum(int(r.get("tokens_before") or 0) for r in folds)
        f_after = sum(int(r.get("tokens_after") or 0) for r in folds)
        s["saved_folded_pct"] = round(100.0 * (f_before - f_after) / f_before, 2) if f_before else 0.0
        for c in PROBE_CATEGORIES:
            if any(f"probes_{c}" in r for r in group):
                n = sum(int(r.get(f"probes_{c}") or 0) for r in group)
                kept = sum(int(r.get(f"survived_{c}") or 0) for r in group)
                s[f"probes_{c}"], s[f"survived_{c}"] = n, kept
                s[f"survival_{c}_pct"] = round(100.0 * kept / n, 2) if n else None
            for col in (f"recall_{c}", f"recall_base_{c}"):
                shares = [float(r[col]) for r in group if r.get(col) is not None]
                if shares:
                    s[f"{col}_pct"] = round(100.0 * sum(shares) / len(shares), 2)
        out.append(s)
    return out


def by_point(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Savings by grid point (and strategy): sessions, how many would trigger, fold, stop uneconomic or stuck,
    tokens before/after summed, and the share saved."""
    points: dict[tuple[int, int, str, str], dict[str, Any]] = {}
    for r in rows:
        key = (int(r["window"]), int(r["tail_tokens"]), str(r["keep_policy"]), strategy_of(r))
        p = points.setdefault(
            key,
            {
                "window": key[0],
                "tail_tokens": key[1],
                "keep_policy": key[2],
                "strategy": key[3],
                "sessions": 0,
                "triggered": 0,
                "folded": 0,
                "uneconomic": 0,
                "stuck": 0,
                "tokens_before": 0,
                "tokens_after": 0,
                "digest_tokens": 0,
            },
        )
        p["sessions"] += 1
        p["triggered"] += bool(r.get("triggered"))
        p["folded"] += int(r.get("folded") or 0) > 0
        p["uneconomic"] += bool(r.get("uneconomic"))
        p["stuck"] += bool(r.get("stuck"))
        for k in ("tokens_before", "tokens_after", "digest_tokens"):
            p[k] += int(r.get(k) or 0)
        for k in PROBE_COLUMNS:
            if k in r:  # compact-eval --probes
                p[k] = p.get(k, 0) + int(r.get(k) or 0)
    out = []
    for key in sorted(points):
        p = points[key]
        p["saved"] = p["tokens_before"] - p["tokens_after"]
        p["saved_pct"] = round(100.0 * p["saved"] / p["tokens_before"], 2) if p["tokens_before"] else 0.0
        for c in PROBE_CATEGORIES:
            if f"probes_{c}" in p:  # an upper bound on what a reader could recall, never recall
                n = p[f"probes_{c}"]
                p[f"survival_{c}_pct"] = round(100.0 * p[f"survived_{c}"] / n, 2) if n else None
        out.append(p)
    return out


def table_text(summary: Mapping[str, Any]) -> str:
    """The summary as plain text: compact-eval's table by grid point, else the totals."""
    lines = [
        f"{summary['job']}: {summary['rows']:,} row(s) from {summary['sources']:,} source(s), "
        f"{summary['errors']} error(s)"
    ]
    if summary["job"] == "compact-eval":
        head: tuple[str, ...] = (
            "window",
            "tail",
            "keep",
            "sessions",
            "trig",
            "folded",
            "unecon",
            "stuck",
            "before",
            "after",
            "saved",
        )
        widths: tuple[int, ...] = (8, 7, 11, 8, 6, 6, 6, 5, 13, 13, 8)
        named = {p.get("strategy", DEFAULT_STRATEGY) for p in summary["points"]} - {DEFAULT_STRATEGY}
        if named:  # more than the one fold: a strategy column first
            head, widths = ("strategy", *head), (10, *widths)
        lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
        for p in summary["points"]:
            cells: tuple[str, ...] = (
                f"{p['window']:,}",
                f"{p['tail_tokens']:,}",
                p["keep_policy"],
                f"{p['sessions']:,}",
                f"{p['triggered']:,}",
                f"{p['folded']:,}",
                f"{p['uneconomic']:,}",
                f"{p['stuck']:,}",
                f"{p['tokens_before']:,}",
                f"{p['tokens_after']:,}",
                f"{p['saved_pct']:.1f}%",
            )
            if named:
                cells = (str(p.get("strategy", DEFAULT_STRATEGY)), *cells)
            lines.append("  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))
        lines += survival_lines(summary["points"])
        lines += strategy_lines(summary.get("strategies", []))
        from foldlog.batch.tier_summary import tier_lines

        lines += tier_lines(summary)
    else:
        for key, value in summary.items():
            if key not in ("job", "rows", "sources", "errors"):
                lines.append(f"  {key:>22}  {value:,}" if isinstance(value, int) else f"  {key:>22}  {value}")
    return "\n".join(lines)


def survival_lines(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """compact-eval --probes: survived/probes by category at each grid point (tier 0: answers
    still written on the surface after the fold, an upper bound on recall)."""
    probed = [p for p in points if "probes_artifact" in p]
    if not probed:
        return []
    lines = ["probe survival (answers still on the surface after the fold; an upper bound, not recall):"]
    for p in probed:
        cells = []
        for c in PROBE_CATEGORIES:
            n, kept = p[f"probes_{c}"], p[f"survived_{c}"]
            cells.append(f"{c} {kept:,}/{n:,}" + (f" ({100.0 * kept / n:.0f}%)" if n else ""))
        label = f"{p['window']:,}/{p['tail_tokens']:,}/{p['keep_policy']}"
        if p.get("strategy", DEFAULT_STRATEGY) != DEFAULT_STRATEGY:
            label += f"/{p['strategy']}"
        lines.append(f"  {label:>24}  " + "  ".join(cells))
    return lines


def strategy_lines(strategies: Sequence[Mapping[str, Any]]) -> list[str]:
    """compact-eval --probes: per strategy over every grid point, tokens saved against
    survival (and recall against its baseline, with a reader) per category."""
    probed = [s for s in strategies if "probes_artifact" in s]
    if not probed:
        return []
    lines = ["saved against survival by strategy (all grid points):"]
    for s in probed:
        cells = []
        for c in PROBE_CATEGORIES:
            pct = s.get(f"survival_{c}_pct")
            cell = f"{c} " + ("-" if pct is None else f"{pct:.0f}%")
            if f"recall_{c}_pct" in s:
                base = s.get(f"recall_base_{c}_pct")
                cell += f" recall {s[f'recall_{c}_pct']:.0f}%" + (
                    "" if base is None else f" (base {base:.0f}%)"
                )
            cells.append(cell)
        head = (
            f"{s['strategy']}: saved {s['saved_pct']:.1f}% ({s['saved_folded_pct']:.1f}% where folded),"
            f" {s['folded']:,}/{s['sessions']:,} folded"
        )
        lines.append(f"  {head:>40}  " + "  ".join(cells))
    return lines


def tradeoff(summary: Mapping[str, Any]) -> list[tuple[str, str, str, float, float]]:
    """The chart's points: ``(strategy, category, measure, saved %, kept %)`` for each strategy
    and probe category, ``measure`` ``survival`` or ``recall`` (when a reader ran); saved % is
    over the sessions that folded, where the probes come from."""
    out = []
    for s in summary.get("strategies", []):
        for c in PROBE_CATEGORIES:
            for measure, key in (("survival", f"survival_{c}_pct"), ("recall", f"recall_{c}_pct")):
                if s.get(key) is not None:
                    out.append((str(s["strategy"]), c, measure, float(s["saved_folded_pct"]), float(s[key])))
    return out


def write_chart(summary: Mapping[str, Any], path: Path) -> None:
    """compact-eval's chart: the share of tokens saved at each grid point (bars); with
    ``--probes`` beside it, saved % against survival % (filled) and recall % (hollow, with a
    reader) for each strategy and probe category — what a fold keeps against what it saves."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("the chart needs matplotlib: pip install 'foldlog[ray]' (or matplotlib)") from None
    points = summary["points"]
    trade = tradeoff(summary)
    labels = [f"{p['window'] // 1000}k / {p['tail_tokens'] // 1000}k / {p['keep_policy']}" for p in points]
    if len({p.get("strategy", DEFAULT_STRATEGY) for p in points}) > 1:
        labels = [f"{label} / {p['strategy']}" for label, p in zip(labels, points, strict=True)]
    saved = [p["saved_pct"] for p in points]
    width = max(6.0, 0.6 * len(points) + 2)
    fig, axes = plt.subplots(
        1, 2 if trade else 1, figsize=(width + (6.0 if trade else 0.0), 4.5), squeeze=False
    )
    ax = axes[0][0]
    bars = ax.bar(range(len(points)), saved, color="#3b7dd8")
    for bar, p in zip(bars, points, strict=True):
        ax.annotate(
            f"{p['folded']}/{p['sessions']}",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
            fontsize=7,
        )
    ax.set_xticks(range(len(points)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("tokens saved (% of the surface)")
    ax.set_title("savings by window / tail / keep (folded/sessions)", fontsize=9)
    if trade:
        _tradeoff_axes(axes[0][1], trade)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _tradeoff_axes(ax: Any, trade: Sequence[tuple[str, str, str, float, float]]) -> None:
    """Saved % (x) against kept % (y): a colour per strategy, a marker per category."""
    colours = ("#3b7dd8", "#d8643b", "#3bd87d", "#9b3bd8", "#d8c43b", "#555555")
    markers = dict(zip(PROBE_CATEGORIES, ("o", "s", "^", "D"), strict=True))
    names = sorted({t[0] for t in trade})
    for strategy, category, measure, saved, kept in trade:
        colour = colours[names.index(strategy) % len(colours)]
        face = colour if measure == "survival" else "none"
        nudge = 0.8 * (PROBE_CATEGORIES.index(category) - 1.5)  # categories at one spot stay visible
        ax.scatter(saved + nudge, kept, marker=markers[category], facecolors=face, edgecolors=colour, s=40)
    for name in names:
        saved = min(t[3] for t in trade if t[0] == name)
        top = max(t[4] for t in trade if t[0] == name)
        ax.annotate(name, (saved, top), textcoords="offset points", xytext=(-4, 6), ha="right", fontsize=7)
    for i, name in enumerate(names):  # the legend: strategies by colour, categories by marker
        ax.scatter([], [], color=colours[i % len(colours)], marker="o", label=name)
    for category, marker in markers.items():
        ax.scatter([], [], color="#999999", marker=marker, label=category)
    ax.set_xlim(0, 100)
    ax.set_ylim(0, 105)
    ax.set_xlabel("tokens saved where folded (% of the surface, all grid points)")
    ax.set_ylabel("kept (%): survival filled, recall hollow")
    ax.set_title("what a fold keeps against what it saves, by strategy", fontsize=9)
    ax.legend(fontsize=7, loc="lower left")


__all__ = [
    "by_point",
    "by_strategy",
    "strategy_lines",
    "strategy_of",
    "summarize",
    "survival_lines",
    "table_text",
    "tradeoff",
    "write_chart",
]
