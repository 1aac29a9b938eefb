"""Write the side-by-side benchmark report (`docs/benchmarks.md` + `docs/benchmarks.png`).

Reads the pytest-benchmark JSON files (``--benchmark-json``) of every bench module present in a
results folder and, for each row B1–B12 of the suite, states the workload and its size, the medians
with min–max, the ratio to the peer, the goal and whether it is met, and the machine. A row whose
module did not run (or whose peer could not run) is kept and says so.

python benches/report.py --results target/bench --out docs/benchmarks.md
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path
from typing import Any

from report_data import REPO, Bench, Row, _pair, _size, by_role, find, fmt_span, fmt_time, load_results
from report_rows import row_b1r_checkpoint, row_b7, row_b8, row_b9, row_b10, row_b11, row_b12


def row_b1(bs: list[Bench]) -> Row:
    row = Row("B1", "open a large log: parse, validate, repair, derive")
    row.goal_ratio = 5
    row.goal = "to ready ≥ 1 GB/s and ≥ 5× orjson; every message materialised ≥ 1.5× orjson"
    runs = [b for b in bs if b.extra.get("row") == "B1" and "workload_name" in b.extra]
    if not runs:
        row.notes.append("bench_load.py did not run")
        return row
    by: dict[tuple[str, str], Bench] = {
        (str(b.extra["workload_name"]), str(b.extra["role"])): b for b in runs
    }
    names = [n for n in ("large", "small", "tiny") if any(k[0] == n for k in by)]
    met = True
    ratios: list[float] = []
    workloads = []
    for name in names:
        any_b = next(b for k, b in by.items() if k[0] == name)
        nbytes = float(any_b.extra.get("bytes", 0))
        workloads.append(f"{name}: {any_b.extra.get('workload', '')}")
        ready, mat = by.get((name, "foldlog ready")), by.get((name, "foldlog materialised"))
        orj, js = by.get((name, "baseline-orjson")), by.get((name, "baseline-json"))
        for b, label in ((ready, "to ready"), (mat, "every message materialised")):
            if b:
                row.ours.append(f"{name}, {label}: {fmt_span(b)} = {nbytes / b.median / 1e6:,.0f} MB/s")
        for b, label in ((orj, "Python + orjson"), (js, "Python + json")):
            if b:
                row.peers.append(f"{name}, {label}: {fmt_span(b)} = {nbytes / b.median / 1e6:,.0f} MB/s")
        if ready and orj:
            r = orj.median / ready.median
            ratios.append(r)
            gbps = nbytes / ready.median / 1e9
            row.notes.append(f"{name}: to ready {r:.1f}× orjson at {gbps:.2f} GB/s")
            met &= r >= 5 and gbps >= 1
        else:
            met = False
        if mat and orj:
            r = orj.median / mat.median
            row.notes.append(f"{name}: every message materialised {r:.1f}× orjson")
            met &= r >= 1.5
        if js and ready:
            row.notes.append(f"{name}: vs json {js.median / ready.median:.1f}×")
    row.workload = "; ".join(workloads)
    if ratios:
        row.ratio = min(ratios)
        row.ratio_label = "orjson / foldlog to ready, the lower workload"
        row.met = met
    return row


def row_b1r(bs: list[Bench]) -> Row:
    row = Row("B1r", "resume to ready: load + token counts + plan → first request body")
    row.goal_ratio = 10
    row.goal = "≥ 10× Python+orjson+tokenizers; cold case stated"
    roles = by_role(bs, "B1r")
    warm = roles.get("foldlog, counts in the log")
    cold = roles.get("foldlog, no counts in the log")
    peer = roles.get("Python + orjson + tokenizers")
    if not (warm or cold or peer):
        row.notes.append("bench_resume.py did not run")
        return row
    any_b = warm or cold or peer
    assert any_b is not None
    row.workload = str(any_b.extra.get("workload", ""))
    row.ratio = _pair(row, warm, peer, "counts in the log", "Python + orjson + tokenizers")
    if cold:
        row.ours.append(f"cold (no counts in the log): {fmt_span(cold)}")
        if peer:
            row.notes.append(f"cold case: {peer.median / cold.median:.1f}× the peer")
    row.ratio_label = "peer / foldlog warm"
    row.met = row.ratio is not None and row.ratio >= 10
    if any_b.extra.get("counts_source"):
        row.notes.append("per-message counts for the planner: " + str(any_b.extra["counts_source"]))
    return row


def row_b2(bs: list[Bench]) -> Row:
    row = Row("B2", "one more step on a 100k-event session")
    row.goal_ratio = 100
    row.goal = "≤ 1 ms; ≥ 100× full recompute"
    roles = by_role(bs, "B2")
    inc, full = roles.get("foldlog"), roles.get("full recompute")
    if not (inc or full):
        row.notes.append("bench_step.py did not run")
        return row
    row.workload = str((inc or full).extra.get("workload", ""))  # type: ignore[union-attr]
    row.ratio = _pair(row, inc, full, "incremental", "full recompute (same library)")
    no_body = roles.get("foldlog, no body")
    if no_body:
        row.ours.append(f"the same without building the body: {fmt_span(no_body)}")
    row.ratio_label = "full / incremental"
    row.met = bool(inc and row.ratio and inc.median <= 1e-3 and row.ratio >= 100)
    for b in (inc, full):
        if b and b.extra.get("missing"):
            row.notes.append(str(b.extra["missing"]))
    return row


def row_b3(bs: list[Bench]) -> Row:
    row = Row("B3", "exact DeepSeek V4 token counts of every message of a large log")
    row.goal_ratio = 3
    row.goal = "identical counts; ≥ 3× tokenizers"
    ours = find(bs, r"^test_b3_count_batch\[foldlog-deepseek-v4\]")
    peer = find(bs, r"^test_b3_count_batch\[tokenizers-deepseek-v4\]")
    if not (ours or peer):
        row.notes.append("bench_tokens.py did not run")
        return row
    row.workload = "corpus texts, " + _size(ours or peer)  # type: ignore[arg-type]
    row.ratio = _pair(row, ours, peer, "foldlog deepseek-v4", "tokenizers encode_batch")
    row.ratio_label = "tokenizers / foldlog"
    row.met = row.ratio is not None and row.ratio >= 3
    o_cl, t_cl = find(bs, r"\[foldlog-cl100k\]"), find(bs, r"\[tiktoken-cl100k\]")
    if o_cl and t_cl:
        row.notes.append(f"cl100k: foldlog {fmt_time(o_cl.median)}, tiktoken {fmt_time(t_cl.median)}")
    return row


def row_b4(bs: list[Bench]) -> Row:
    row = Row("B4", "plan a compaction of a 100k-message history")
    row.goal_ratio = 100
    row.goal = "≤ 3 ms (≥ 100×), exact"
    ours = find(bs, r"^test_b4_foldlog_plan_cached")
    peer = find(bs, r"^test_b4_langchain_trim_messages")
    cold = find(bs, r"^test_b4_foldlog_plan_cold")
    if not (ours or peer):
        row.notes.append("bench_plan.py did not run")
        return row
    row.workload = "100k messages from the corpus " + _size(ours or peer)  # type: ignore[arg-type]
    row.ratio = _pair(row, ours, peer, "Rust planner, cached counts", "langchain trim_messages")
    if cold:
        row.ours.append(f"cold (build input): {fmt_span(cold)}")
    row.ratio_label = "langchain / foldlog"
    row.met = bool(ours and row.ratio and ours.median <= 3e-3 and row.ratio >= 100)
    return row


def row_b5(bs: list[Bench]) -> Row:
    row = Row("B5", "loop overhead per step, zero-latency model")
    row.goal = "≤ 0.5 ms/step, flat from 25 to 2,000 steps"
    runs = [b for b in bs if b.name.startswith("test_b5_loop_overhead")]
    if not runs:
        row.notes.append("bench_loop.py did not run")
        return row
    row.workload = "tool loops of " + ", ".join(sorted({str(b.params.get("steps")) for b in runs}, key=int))
    per: dict[str, dict[int, Bench]] = {}
    for b in runs:
        per.setdefault(str(b.params.get("framework")), {})[int(b.params.get("steps", 1))] = b
    for fw, by_steps in sorted(per.items()):
        cells = ", ".join(
            f"{n}: {b.median * 1e3 / n:.3f} ({b.min * 1e3 / n:.3f}–{b.max * 1e3 / n:.3f}) ms/step"
            for n, b in sorted(by_steps.items())
        )
        (row.ours if fw.startswith("foldlog") else row.peers).append(f"{fw}: {cells}")
    ours = per.get("foldlog", {})
    if ours:
        ms = {n: b.median * 1e3 / n for n, b in ours.items()}
        flat = max(ms.values()) <= 2 * min(ms.values())
        row.met = max(ms.values()) <= 0.5 and flat
        peers = [p for fw, p in per.items() if not fw.startswith("foldlog")]
        common = [n for n in ours if any(n in p for p in peers)]
        if common:
            n = max(common)
            best_peer = min(p[n].median for p in peers if n in p)
            row.ratio = best_peer / ours[n].median
            row.ratio_label = f"fastest peer / foldlog at {n} steps"
    return row


def row_b6(bs: list[Bench]) -> Row:
    row = Row("B6", "import time (cold, -X importtime)")
    row.goal = "≤ 50 ms"
    runs = {str(b.params.get("module")): b for b in bs if b.name.startswith("test_b6_import_time")}
    if not runs:
        row.notes.append("bench_import.py did not run")
        return row
    row.workload = "fresh interpreter per round"

    def ms(b: Bench) -> float:
        return float(b.extra.get("importtime_ms", b.median * 1e3))

    for mod, b in runs.items():
        (row.ours if mod.startswith("foldlog") else row.peers).append(f"import {mod}: {ms(b):.0f} ms")
    ours = runs.get("foldlog")
    if ours:
        row.met = ms(ours) <= 50
        peers = [ms(b) for m, b in runs.items() if not m.startswith("foldlog")]
        if peers:
            row.ratio = min(peers) / ms(ours)
            row.ratio_label = "fastest peer / foldlog"
    return row


# What bounds a row whose goal is not met (profiled with callgrind/perf; see the bench docstrings).
BOUNDS = {
    "B11": "not profiled; measured on the shared 2-core machine (load average 6–14 from the other "
    "checkouts' builds and tests during the run: two serial stats runs took 35 s and 50 s), so the "
    "ratios move by ±30 % between runs. The process pool reached 1.75× (stats) and 2.2× (compact-eval) "
    "serial in the same run, so the work itself splits; Ray's gap to the pool (stats 26 s vs 20 s) is "
    "Ray's own processes (raylet, GCS, each worker's gRPC threads) taking CPU from the two workers",
    "B12": "one cProfile of a serial mechanical-only run (dev build, 2026-12-02, load average ~8 on the "
    "2 shared cores, 53 s): no single hot spot — the core's plan_history 11 %, regex searches 9 % and "
    "the identifier facts 8 % (probe generation and scoring), freezing events into Python objects 7 %, "
    "token counting and the rest spread thin; every strategy runs the whole grid again (one row per "
    "strategy), so the time grows with the strategies compared. To close: the release build first "
    "(not measured here), then profile again",
    "B1": "to ready: perf of the release build loading the small-message log (182 MB, 1.14M lines) "
    "three times, 2026-12-03, load ~1.4: the envelope scanner (`event/scan.rs`, a validating skip "
    "over `data`, strings 16 bytes at a time with SSE2) ~24 %, the second read of each message's "
    "shape (sonic-rs) ~13 %, building each event (`Parsed::read`, a tenth of it the shared buffer's "
    "reference count contended between the two threads) ~10 %, kernel page zeroing ~6 %, malloc/free "
    "~6 %, UTF-8 (simdutf8) ~3 %. Ceilings measured on the same file and machine (MB/s, one thread / "
    "the reader's pool of 2): the page-cache read 1,894 / —, the newline split 5,138 / 6,346, "
    "serde_json's `IgnoredAny` skip per line 919 / 1,809, our envelope scanner per line ~895 / "
    "~1,770 — the scan alone runs at serde's skip speed, and scan + UTF-8 already take ~230 ms of the "
    "~364 ms of CPU 1 GB/s allows on 2 cores, out of ~880 ms the whole load takes: the rest is per-event "
    "work (the shape's second read, the event, the log's rules, allocation). To close: read the "
    "message shape in the scan (one pass; the visitors' rules, e.g. a repeated key keeps its last "
    "value, would move into the scanner), no reference-count increment per event, shapes in an "
    "arena, an mmap'ed buffer (no page zeroing). Tried and kept: the hand-written envelope scanner "
    "(−17 % CPU small), the unzeroed file read, SSE2 string skip (+3–4 % large, ±3 % small: short "
    "strings), simdutf8 (−16–45 % of the UTF-8 check), unchecked `seq` digits (small +7 % to ready "
    "with the last two); sonic-rs for the shape pass (−4 % CPU large); huge pages (−10 % CPU). Tried "
    "and dropped: sonic-rs for the envelope (on par with serde_json), simd-json (a mutable copy per "
    "line, no raw spans). Every message materialised (perf, small): the cyclic GC's passes over the "
    "top-level message dicts, which stay tracked, ~36 % (collections paused while a batch is built "
    "cut them from 789/71/6 to 358/32/2 by generation), reading `data` ~12 %, making the dicts and "
    "strings ~10 %; messages of the common forms are built from their lines without a "
    "`serde_json::Value` (`log::flat`); CPython's fast ASCII string constructor is not in the "
    "stable ABI the wheel uses.",
    "B1r": "phases of the warm resume timed one by one on the same 113,593-event log (release build, "
    "2026-11-29, second of two runs): `Session.load` 0.58 s (parse, validate, repair, project: B1's "
    "bound), `derive_messages()` 0.27 s (one frozen Python object per message), per-message counts from "
    "the log 0.11 s (`Event::cached_tokens` decodes each line's envelope a second time to find its "
    "`tokens` field), planner input built in Python 0.09 s (`planning.build_history` walks every "
    "message), request body 0.13 s (first serialisation of every message); 1.18 s in all. To close: "
    "read the `tokens` field in the envelope parse at load, build the planner's input in the core from "
    "the derived messages (no Python messages needed to plan or to build the body), and the B1 work on "
    "the load itself.",
    "B1r-ckpt": "phases timed one by one (release build, 2026-12-02, best of 6–7 on a shared machine at "
    "load average ~11 on 2 cores): at 100k events `Session.load` from the checkpoint 16–20 ms "
    "(restore ~10 ms: reading the checkpoint, parsing the ~1,300 lines it holds, one placeholder "
    "slot per event), "
    "`plan_history` 11–17 ms (every surface message built once for the planner's input), the first body "
    "4–16 ms; 28 ms in all. What grows with length: the restored log keeps one 80-byte slot per event and "
    "the count and wire caches are sized by seq (~100 bytes per event written, nothing read or parsed): "
    "restore 50–60 ms at 1M events. To close: a sparse event store in the core (slots only for the events "
    "held) and caches keyed by the surface.",
    "B5": "py-spy (200 Hz) of the 2,000-step foldlog loop (release build, 2026-11-29): 28 % of the samples "
    "sit on the line of `Session.derive_messages` that calls the core's `derived_since`, and 2 % copy the "
    "whole derived history into a new tuple; it is reached from every step's `append_event` (usage → "
    "`record_prompt_tokens` derives to count messages: 15 %), from `wire_messages` for the request (19 %) "
    "and from logging the reply — several O(history) calls per step, so the cost per step grows with the "
    "session. To close: derive once per step and reuse it, let `record_prompt_tokens` take the message "
    "count from the core without deriving, and hand the request the cached per-message wire JSON "
    "(the B2 work).",
    "B9": "the model. The packaged Gemma 3 270M is the pretrained model, not an instruction-tuned "
    "one: it follows patterns, not instructions, never emits `<end_of_turn>`, and copies the nearest "
    "worked example (its tool, and often its answer's words). Format, calls and arguments are made "
    "right by the provider (Gemma's turns, a GBNF grammar, the call-or-answer decision calibrated "
    "against a content-free question, repeated calls refused); what fails is the model's choice of "
    "tool (read_file on a folder), arithmetic and comparisons, and answers copied from an example; "
    "an instruction-tuned 0.5B model through the same provider does better (the comparison, when it "
    "ran). See docs/local-model.md for what was tried",
    "B7": "cProfile of a 100-session round (dev build, 2026-12-02; it inflates Python's share): what "
    "bounded it was a new TCP connection per request — the stream stopped at `[DONE]` before the "
    "body's end, so httpx dropped the connection — and then httpx's pool scanning every connection "
    "on each request (O(connections)). Now the body's rest is drained in the background so the "
    "connection goes back to the pool, HTTP/1.1 without a proxy goes through a constant-time pool "
    "under httpx (`providers/http/pool.py` on plain asyncio), and SSE is decoded in the core: the "
    "process's CPU per session·step fell from 4.5–5.1 ms to ~2.2 ms. Then the cost meter's sync "
    "(12 % of the event loop) left the step's path (a reply is priced with its request's model; the "
    "ledger reads the log only where totals are read) and the POST is built once per client and "
    "handed to the pool (`LeanPost`; httpx's build_request/send/cookie layers were ~15 %): CPU per "
    "session·step −25 % (3.8 → 2.9 ms, 200 sessions, interleaved runs on a loaded machine). What "
    "bounds it now (thread-time profile): httpcore/h11 handling of request and response headers "
    "(~28 % of the event loop), reading the reply (~17 %), the background drain of the body after "
    "`[DONE]` (~8 %), the tool batch (~8.5 %), log appends (~7 %). Idle memory: an idle agent drops "
    "its turn's tool results and its inbox event (tracemalloc 19.6 → 11.0 KB of Python objects per "
    "agent).",
    "B2": "py-spy --native of the step on this host (release build of b4d4744, 2026-12-03): after "
    "the media scan's fix (below) a fifth of the step was making the request's message entries, "
    "one per message of the 113,593-event history (the send plan's items collected, mapped to "
    "seqs, copied into a shared array, the previous request's array freed: large allocations, "
    "fresh zeroed pages each time), and a tenth counting the same tool schemas again. Now the "
    "plan's final items, which never change within an epoch of the plan "
    "(`EventLog::send_epoch`), are kept in shared chunks of 1,024 entries of 8 bytes "
    "(`foldlog-py/src/entries.rs`, counted in `Log.heap_bytes`): a request makes the last "
    "partial chunk and its tail; tools are counted again only when their JSON changes. Median "
    "1.00 → 0.31–0.37 ms (min 0.88 → 0.25–0.27 ms) on this host. What is left of the step "
    "(py-spy): the compaction check's local prompt count, the body's frame and the loop's "
    "appends. Fixed before that: half of the step with its body was `resolve_wire` looking at "
    "every message that holds blocks for a media reference, a scan added with media sessions "
    "(2026-12-02); now the core says which messages reference media, looking only at the events "
    "appended since it was last asked (`log/media_scan.rs`). The host of 2026-12-03 is ~2× "
    "slower than the earlier one (the full recompute 0.96 s there).",
}


def add_bounds(rows: list[Row]) -> None:
    for r in rows:
        if r.met is False:
            r.notes.append("what bounds it: " + BOUNDS.get(r.id, "not profiled yet"))


ROWS = [
    row_b1,
    row_b1r,
    row_b1r_checkpoint,
    row_b2,
    row_b3,
    row_b4,
    row_b5,
    row_b6,
    row_b7,
    row_b8,
    row_b9,
    row_b10,
    row_b11,
    row_b12,
]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_text(machine: dict[str, Any]) -> str:
    cpu = (machine.get("cpu") or {}).get("brand_raw") or cpu_model()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{os.cpu_count()} cores, {cpu}; {platform.system()} {platform.release()}; "
        f"Python {machine.get('python_version', platform.python_version())}; "
        f"load average at report time {load:.1f} (a shared machine: ratios measured pair by pair)"
    )


def run_date(machine: dict[str, Any]) -> str:
    """When the results were measured (pytest-benchmark's datetime), else now."""
    import datetime

    when = machine.get("datetime") or datetime.datetime.now(datetime.UTC).isoformat()
    return str(when)[:16].replace("T", " ") + " UTC"


def chart(rows: list[Row], out: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    shown = [r for r in rows if r.ratio]
    if not shown:
        return False
    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(9, 0.55 * len(shown) + 1.6))
    names = [f"{r.id} ({r.ratio_label})" for r in shown]
    vals = [r.ratio or 0.0 for r in shown]
    colors = ["#2a9d8f" if r.met else "#e76f51" for r in shown]
    goals = [(i, r.goal_ratio) for i, r in enumerate(shown) if r.goal_ratio]
    low = min(0.5, min(vals) / 2)
    ax.barh(names, [v - low for v in vals], left=low, color=colors)
    if goals:
        ax.scatter([g for _, g in goals], [i for i, _ in goals], marker="|", s=500, color="black", zorder=3)
    ax.set_xscale("log")
    ax.set_xlim(low, max([*vals, *(g for _, g in goals)]) * 6)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}×"))
    ax.axvline(1, color="black", linewidth=0.8)
    for i, v in enumerate(vals):
        ax.text(v, i, f" {v:,.1f}×", va="center")
    ax.invert_yaxis()
    ax.set_xlabel(
        "ratio, log scale (> 1× = foldlog ahead); green = goal met, red = not; black tick = the goal"
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return True


def render(
    rows: list[Row], machine: dict[str, Any], png: str | None, run_notes: list[str] | None = None
) -> str:
    out = [
        "# Benchmarks",
        "",
        "Generated by `benches/report.py` from the pytest-benchmark results of `make bench` (release",
        "build). Medians with min–max over the rounds; ratios are measured pair by pair in one run.",
        "",
        f"**Machine:** {machine_text(machine)}",
        "",
        f"**Run:** {run_date(machine)}",
        "",
    ]
    out += [f"- {n}" for n in run_notes or []]
    if run_notes:
        out.append("")
    if png:
        out += [f"![ratios]({png})", ""]
    out += [
        "| # | workload | foldlog | compared with | ratio | goal | met? |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ratio = f"{r.ratio:.1f}× ({r.ratio_label})" if r.ratio else "—"
        met = {True: "yes", False: "**no**", None: "not measured"}[r.met]
        out.append(
            f"| {r.id} | {r.title}; {r.workload} | {'<br>'.join(r.ours) or '—'} | "
            f"{'<br>'.join(r.peers) or '—'} | {ratio} | {r.goal} | {met} |"
        )
    notes = list(dict.fromkeys((r.id, n) for r in rows for n in r.notes))
    if notes:
        out += ["", "## Notes", ""]
        out += [f"- **{rid}**: {n}" for rid, n in notes]
    return "\n".join(out) + "\n"


README_START = "<!-- bench:start (written by benches/report.py) -->"
README_END = "<!-- bench:end -->"


def headline(rows: list[Row]) -> str:
    """The README's summary: one line per row with its ratio, goal and verdict."""
    out = ["| # | workload | ratio | goal | met? |", "|---|---|---|---|---|"]
    for r in rows:
        ratio = f"{r.ratio:,.1f}× ({r.ratio_label})" if r.ratio else "—"
        met = {True: "yes", False: "**no**", None: "not measured"}[r.met]
        out.append(f"| {r.id} | {r.title} | {ratio} | {r.goal} | {met} |")
    return "\n".join(out)


def update_readme(readme: Path, rows: list[Row], machine: dict[str, Any]) -> bool:
    """Replace the block between the bench markers of the README, if it has them."""
    if not readme.is_file():
        return False
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        return False
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    block = f"{README_START}\nMeasured {run_date(machine)} on {machine_text(machine)}.\n\n{headline(rows)}\n"
    readme.write_text(head + block + README_END + tail)
    return True


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--results", type=Path, default=REPO / "target" / "bench")
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "benchmarks.md")
    ap.add_argument("--note", action="append", default=[], help="a line about this run, shown on top")
    ap.add_argument("--readme", type=Path, default=REPO / "README.md", help="README with the bench markers")
    args = ap.parse_args(argv)
    benches, machine = load_results(args.results)
    rows = [f(benches) for f in ROWS]
    add_bounds(rows)
    png = args.out.with_suffix(".png")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    have_png = chart(rows, png)
    args.out.write_text(render(rows, machine, png.name if have_png else None, args.note))
    print(f"wrote {args.out}" + (f" and {png}" if have_png else ""))
    if update_readme(args.readme, rows, machine):
        print(f"updated the headline table in {args.readme}")


if __name__ == "__main__":
    main()
