"""The report's data: pytest-benchmark results read back (`Bench`), a report row (`Row`) and the
formatting every row uses. `report.py` builds the rows B1–B6 itself and the others from
`report_rows.py`."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Bench:
    name: str
    group: str
    params: dict[str, Any]
    median: float
    min: float
    max: float
    rounds: int
    extra: dict[str, Any]

    def value(self, key: str | None = None, scale: float = 1.0) -> tuple[float, float, float]:
        """(median, min, max), from the timing or from an extra_info key (then min=max=median)."""
        if key:
            v = float(self.extra[key])
            return v, v, v
        return self.median * scale, self.min * scale, self.max * scale


def load_results(folder: Path) -> tuple[list[Bench], dict[str, Any]]:
    benches: list[Bench] = []
    machine: dict[str, Any] = {}
    for path in sorted(folder.glob("*.json")):
        try:
            doc = json.loads(path.read_text())
        except ValueError:
            continue
        if not machine:
            machine = dict(doc.get("machine_info", {}))
        when = doc.get("datetime")
        if when and (not machine.get("datetime") or str(when) < str(machine["datetime"])):
            machine["datetime"] = when  # the run started with its first module
        for b in doc.get("benchmarks", []):
            st = b["stats"]
            benches.append(
                Bench(
                    b["name"],
                    b.get("group") or "",
                    b.get("params") or {},
                    st["median"],
                    st["min"],
                    st["max"],
                    st["rounds"],
                    b.get("extra_info") or {},
                )
            )
    return benches, machine


def find(benches: list[Bench], pattern: str) -> Bench | None:
    rx = re.compile(pattern)
    return next((b for b in benches if rx.search(b.name)), None)


def fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms"
    return f"{s * 1e6:.0f} µs"


def fmt_span(b: Bench, scale: float = 1.0, unit: Callable[[float], str] = fmt_time) -> str:
    med, lo, hi = b.value(scale=scale)
    return f"{unit(med)} ({unit(lo)}–{unit(hi)})"


@dataclass
class Row:
    id: str
    title: str
    workload: str = "—"
    ours: list[str] = field(default_factory=list)
    peers: list[str] = field(default_factory=list)
    ratio: float | None = None
    ratio_label: str = ""
    goal: str = ""
    met: bool | None = None
    notes: list[str] = field(default_factory=list)
    # the ratio the goal asks for, drawn on the chart (rows whose goal is absolute have none)
    goal_ratio: float | None = None


def _size(b: Bench) -> str:
    e = b.extra
    parts = []
    if "events" in e:
        parts.append(f"{int(e['events']):,} events")
    if "messages" in e:
        parts.append(f"{int(e['messages']):,} messages")
    if "bytes" in e:
        parts.append(f"{int(e['bytes']) / 1e6:.1f} MB")
    if "MB" in e:
        parts.append(f"{e['MB']} MB")
    if "texts" in e:
        parts.append(f"{int(e['texts']):,} texts")
    return ", ".join(parts)


def _pair(row: Row, ours: Bench | None, peer: Bench | None, label: str, peer_label: str) -> float | None:
    if ours:
        row.ours.append(f"{label}: {fmt_span(ours)}")
    if peer:
        row.peers.append(f"{peer_label}: {fmt_span(peer)}")
    if ours and peer:
        return peer.median / ours.median
    return None


def by_role(bs: list[Bench], row: str) -> dict[str, Bench]:
    """The benches of one row by their ``extra_info`` role (modules owned by others keep these)."""
    return {str(b.extra["role"]): b for b in bs if b.extra.get("row") == row and "role" in b.extra}
