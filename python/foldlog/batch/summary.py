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
    else:
        summary["sessions"] = len(ok)
    return summary


def by_point(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Savings by grid point: sessions, how many would trigger, fold, stop uneconomic or stuck,
    tokens before/after summed, and the share saved."""
    points: dict[tuple[int, int, str], dict[str, Any]] = {}
    for r in rows:
        key = (int(r["window"]), int(r["tail_tokens"]), str(r["keep_policy"]))
        p = points.setdefault(
            key,
            {
                "window": key[0],
                "tail_tokens": key[1],
                "keep_policy": key[2],
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
        head = (
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
        widths = (8, 7, 11, 8, 6, 6, 6, 5, 13, 13, 8)
        lines.append("  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)))
        for p in summary["points"]:
            cells = (
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
            lines.append("  ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)))
        lines += survival_lines(summary["points"])
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
        lines.append(f"  {label:>24}  " + "  ".join(cells))
    return lines


def write_chart(summary: Mapping[str, Any], path: Path) -> None:
    """A bar chart of the share of tokens saved at each grid point (compact-eval)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("the chart needs matplotlib: pip install 'foldlog[ray]' (or matplotlib)") from None
    points = summary["points"]
    labels = [f"{p['window'] // 1000}k / {p['tail_tokens'] // 1000}k / {p['keep_policy']}" for p in points]
    saved = [p["saved_pct"] for p in points]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.6 * len(points) + 2), 4.5))
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
    ax.set_title("compact-eval: savings by window / tail budget / keep policy (folded/sessions)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


__all__ = ["by_point", "summarize", "survival_lines", "table_text", "write_chart"]
