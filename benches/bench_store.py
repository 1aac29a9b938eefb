"""B8 — durable appends: step batches per second with one commit (fsync) per step.

Sides, fed the same steps cut from the real τ-bench airline trajectories in the corpus (each
assistant message with its tool calls and results, or a user message, is one step):

- foldlog ``PostgresStore``: ``StoreWriter.append`` of the step's event lines (one transaction);
- foldlog JSONL store: ``FileStore`` when it is on this branch, else the same work written
  plainly (append the lines, flush, ``fsync``) and labelled so;
- OpenAI Agents SDK ``SQLiteSession.add_items`` on a file (WAL, its defaults) with the step's
  chat messages — the way an SDK user persists a conversation.

With ``--writers 1,8`` the same is measured with 8 sessions written at once from 8 threads (the
steps split between them; aggregate step batches/s): a host serving many sessions.

Run:  python benches/bench_store.py [--steps 1000] [--rounds 5] [--writers 1,8] [--json out.json]
      (or under pytest-benchmark: pytest benches/bench_store.py)
A PostgreSQL server comes from FOLDLOG_BENCH_DSN or is started with scripts/pg-test-cluster.sh.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FOLDLOG_SHARED", REPO.parent / "shared"))
TAU = SHARED / "corpus" / "tau-bench" / "gpt-4o-airline.json"
T0 = 1_755_000_000_000


@dataclass(frozen=True)
class Step:
    lines: bytes  # foldlog event lines of this step (seqs from 0 within a fresh session)
    count: int
    items: list[dict[str, Any]]  # the chat messages of this step, for SQLiteSession


def _line(event: dict[str, Any]) -> bytes:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def build_steps(n_steps: int) -> list[Step]:
    """Steps cut from τ-bench trajectories (repeated as needed), numbered as one long session."""
    trajectories = [t["traj"] for t in json.loads(TAU.read_text())]
    steps: list[Step] = []
    seq = 0
    turn = step_no = 0

    def ev(type_: str, data: dict[str, Any], **extra: Any) -> dict[str, Any]:
        nonlocal seq
        event = {"type": type_, "seq": seq, "time": T0 + seq, "data": data, **extra}
        seq += 1
        return event

    while len(steps) < n_steps:
        for traj in trajectories:
            i = 0
            while i < len(traj) and len(steps) < n_steps:
                msg = traj[i]
                role = msg.get("role")
                if role in ("system", "user"):
                    turn += 1
                    events = [ev("turn/start", {"turn": turn})] if role == "user" else []
                    kind = "user/message" if role == "user" else "system/message"
                    events.append(ev(kind, {"role": role, "content": msg["content"]}, surfaceOp="append"))
                    steps.append(Step(b"".join(map(_line, events)), len(events), [msg]))
                    i += 1
                    continue
                if role != "assistant":
                    i += 1
                    continue
                step_no += 1
                items = [msg]
                events = [ev("step/start", {"turn": turn, "step": step_no})]
                message = {k: v for k, v in msg.items() if v is not None}
                data = {"turn": turn, "step": step_no, "message": message}
                events.append(ev("assistant/message", data, surfaceOp="append"))
                calls: dict[str, int] = {}
                for call in msg.get("tool_calls") or []:
                    fn = call["function"]
                    call_data = {"turn": turn, "step": step_no, "callId": call["id"], "name": fn["name"]}
                    events.append(ev("tool/call", {**call_data, "arguments": fn["arguments"]}))
                    calls[call["id"]] = events[-1]["seq"]
                i += 1
                while i < len(traj) and traj[i].get("role") == "tool":
                    res = traj[i]
                    items.append(res)
                    body = {
                        "role": "tool",
                        "toolCallId": res["tool_call_id"],
                        "toolName": res.get("name", ""),
                        "content": res["content"],
                        "isError": False,
                    }
                    source = [calls[res["tool_call_id"]]] if res["tool_call_id"] in calls else []
                    events.append(
                        ev(
                            "tool/result",
                            {"turn": turn, "step": step_no, "message": body},
                            surfaceOp="append",
                            sourceEventSeqs=source,
                        )
                    )
                    i += 1
                events.append(ev("step/end", {"turn": turn, "step": step_no}))
                steps.append(Step(b"".join(map(_line, events)), len(events), items))
            if len(steps) >= n_steps:
                break
    return steps


def header_line(session_id: str) -> bytes:
    """The header as ``open_writer`` takes it (no newline)."""
    return header(session_id)[:-1]


def header(session_id: str) -> bytes:
    head = {"type": "session", "version": 1, "id": session_id, "createdAt": T0, "parent": None, "meta": {}}
    return _line(head)


# --- the sides ----------------------------------------------------------------------------------
# Each side appends its share of the steps to a fresh session of its own. ``ready()`` is called
# after the set-up and before the first timed append (a barrier when writers run concurrently);
# each returns the (start, end) of its timed part on the perf_counter clock.

Span = tuple[float, float]


def run_postgres(dsn: str, steps: list[Step], ready: Callable[[], object] = lambda: None) -> Span:
    from foldlog.stores.postgres import PostgresStore

    sid = f"b8-{uuid.uuid4().hex[:8]}"
    with PostgresStore(dsn, max_readers=1) as store, store.open_writer(sid, header_line(sid)) as writer:
        seq = 0
        ready()
        start = time.perf_counter()
        for step in steps:
            writer.append(step.lines, seq, step.count)
            seq += step.count
        return start, time.perf_counter()


def _jsonl_label() -> str:
    try:
        import foldlog.stores.file  # noqa: F401
    except ImportError:
        return "JSONL append+fsync (plain file; FileStore not on this branch)"
    return "foldlog FileStore (JSONL)"


def run_jsonl(folder: Path, steps: list[Step], ready: Callable[[], object] = lambda: None) -> Span:
    sid = f"b8-{uuid.uuid4().hex[:8]}"
    try:
        from foldlog.stores.file import FileStore
    except ImportError:
        with open(folder / f"{sid}.jsonl", "ab") as f:
            f.write(header(sid))
            f.flush()
            os.fsync(f.fileno())
            ready()
            start = time.perf_counter()
            for step in steps:
                f.write(step.lines)
                f.flush()
                os.fsync(f.fileno())
            return start, time.perf_counter()
    writer = FileStore(str(folder)).open_writer(sid, header_line(sid))
    try:
        seq = 0
        ready()
        start = time.perf_counter()
        for step in steps:
            writer.append(step.lines, seq, step.count)
            seq += step.count
        return start, time.perf_counter()
    finally:
        writer.close()


def run_sqlite_session(db: Path, steps: list[Step], ready: Callable[[], object] = lambda: None) -> Span:
    """Agents SDK sessions share one database file, as an SDK host keeps them."""
    from agents.memory import SQLiteSession

    session = SQLiteSession(f"b8-{uuid.uuid4().hex[:8]}", str(db))

    async def go() -> Span:
        await session.add_items([{"role": "system", "content": "warm"}])  # creates tables, WAL
        ready()
        start = time.perf_counter()
        for step in steps:
            await session.add_items(step.items)  # type: ignore[arg-type]
        return start, time.perf_counter()

    try:
        return asyncio.run(go())
    finally:
        session.close()


def rate(side: Callable[..., Span], steps: list[Step], writers: int) -> float:
    """Step batches per second: one writer, or ``writers`` threads with a session each."""
    if writers == 1:
        start, end = side(steps)
        return len(steps) / (end - start)
    share = len(steps) // writers
    barrier = threading.Barrier(writers)
    spans: list[Span] = []
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            # every writer's session starts at seq 0: each writes the first `share` steps
            spans.append(side(steps[:share], barrier.wait))
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return share * writers / (max(e for _, e in spans) - min(s for s, _ in spans))


def check_same_input(dsn: str, folder: Path, steps: list[Step]) -> None:
    """Before timing: every side stores what it was given (foldlog byte for byte, SDK item count)."""
    from agents.memory import SQLiteSession

    from foldlog.stores.postgres import PostgresStore

    sid = f"b8-check-{uuid.uuid4().hex[:8]}"
    with PostgresStore(dsn) as store, store.open_writer(sid, header_line(sid)) as writer:
        seq = 0
        for step in steps:
            writer.append(step.lines, seq, step.count)
            seq += step.count
        assert store.read_log(sid) == header(sid) + b"".join(s.lines for s in steps)
    session = SQLiteSession("check", str(folder / "check.sqlite"))
    try:

        async def fill() -> int:
            for step in steps:
                await session.add_items(step.items)  # type: ignore[arg-type]
            return len(await session.get_items())

        assert asyncio.run(fill()) == sum(len(s.items) for s in steps)
    finally:
        session.close()


def fsync_cost(folder: Path, n: int = 200) -> float:
    """Median seconds of one write+fsync of a small line on this disk."""
    times = []
    with open(folder / "fsync-probe", "ab") as f:
        for _ in range(n):
            start = time.perf_counter()
            f.write(b'{"probe":1}\n')
            f.flush()
            os.fsync(f.fileno())
            times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- the server ---------------------------------------------------------------------------------


@contextmanager
def postgres_server() -> Iterator[str]:
    external = os.environ.get("FOLDLOG_BENCH_DSN")
    if external:
        yield external
        return
    folder = tempfile.mkdtemp(prefix="foldlog-pg-bench-")
    script = REPO / "scripts" / "pg-test-cluster.sh"
    proc = subprocess.run(["bash", str(script), "start", folder], capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"could not start PostgreSQL: {proc.stderr}")
    try:
        yield proc.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(["bash", str(script), "stop", folder], capture_output=True, timeout=120)


def prepared_database(server_dsn: str) -> str:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from foldlog.stores.postgres import init_db

    name = f"foldlog_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(server_dsn)
    params["dbname"] = name
    dsn = str(make_conninfo("", **params))
    init_db(dsn)
    return dsn


# --- the report ---------------------------------------------------------------------------------


SQLITE = "Agents SDK SQLiteSession.add_items"


def measure(n_steps: int, rounds: int, writer_counts: list[int]) -> dict[str, Any]:
    import psycopg

    steps = build_steps(n_steps)
    with postgres_server() as server, tempfile.TemporaryDirectory(prefix="foldlog-b8-") as tmp:
        folder = Path(tmp)
        dsn = prepared_database(server)
        check_same_input(dsn, folder, steps[:200])
        sides: dict[str, Callable[..., Span]] = {
            "foldlog PostgresStore": lambda st, ready=lambda: None: run_postgres(dsn, st, ready),
            _jsonl_label(): lambda st, ready=lambda: None: run_jsonl(folder, st, ready),
            SQLITE: lambda st, ready=lambda: None: run_sqlite_session(folder / "agents.sqlite", st, ready),
        }
        for side in sides.values():  # warm-up
            rate(side, steps[:100], 1)
        results: dict[str, dict[str, Any]] = {}
        for writers in writer_counts:
            rates: dict[str, list[float]] = {name: [] for name in sides}
            for _ in range(rounds):  # interleaved rounds: noise hits every side alike
                for name, side in sides.items():
                    rates[name].append(rate(side, steps, writers))
            results[str(writers)] = {
                name: {"median": statistics.median(v), "min": min(v), "max": max(v), "rounds": v}
                for name, v in rates.items()
            }
        probe = fsync_cost(folder)
        with psycopg.connect(dsn) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            server_version = row[0] if row else "?"
    return {
        "benchmark": "B8 durable append (one commit per step)",
        "steps": n_steps,
        "events": sum(s.count for s in steps),
        "bytes": sum(len(s.lines) for s in steps),
        "rounds": rounds,
        "fsync_seconds": probe,
        "machine": f"{os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
        f"Python {platform.python_version()}, PostgreSQL {server_version}",
        "results": results,
    }


def render(report: dict[str, Any]) -> str:
    rows = [
        f"B8 — {report['steps']:,} step batches ({report['events']:,} events, {report['bytes']:,} bytes) "
        f"from τ-bench, one commit per step; {report['rounds']} rounds, median (min–max).",
        f"Machine: {report['machine']}; one small write+fsync: {report['fsync_seconds'] * 1e6:.0f} µs.",
        "",
        "| writers | store | step batches/s | vs SQLiteSession |",
        "|---|---|---|---|",
    ]
    for writers, sides in report["results"].items():
        base = sides[SQLITE]["median"]
        for name, r in sides.items():
            rows.append(
                f"| {writers} | {name} | {r['median']:,.0f} ({r['min']:,.0f}–{r['max']:,.0f}) "
                f"| {r['median'] / base:.2f}× |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--writers", default="1,8", help="comma-separated writer counts (threads, one session each)"
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results as JSON here")
    args = parser.parse_args(argv)
    report = measure(args.steps, args.rounds, [int(x) for x in args.writers.split(",")])
    print(render(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
    return 0


# --- pytest-benchmark entry points (pytest benches/bench_store.py) -------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - the script runs without pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    _STEPS = 500

    @pytest.fixture(scope="module")
    def b8_env() -> Iterator[tuple[str, Path, list[Step]]]:
        with postgres_server() as server, tempfile.TemporaryDirectory(prefix="foldlog-b8-") as tmp:
            yield prepared_database(server), Path(tmp), build_steps(_STEPS)

    def _bench(benchmark: Any, fn: Callable[[], Span]) -> None:
        start, end = benchmark.pedantic(fn, rounds=5, warmup_rounds=1, iterations=1)
        benchmark.extra_info["steps"] = _STEPS
        benchmark.extra_info["step_batches_per_s_last_round"] = _STEPS / (end - start)

    def test_b8_postgres_store(benchmark: Any, b8_env: tuple[str, Path, list[Step]]) -> None:
        dsn, _, steps = b8_env
        _bench(benchmark, lambda: run_postgres(dsn, steps))

    def test_b8_jsonl_store(benchmark: Any, b8_env: tuple[str, Path, list[Step]]) -> None:
        _, folder, steps = b8_env
        _bench(benchmark, lambda: run_jsonl(folder, steps))

    def test_b8_agents_sqlite_session(benchmark: Any, b8_env: tuple[str, Path, list[Step]]) -> None:
        pytest.importorskip("agents", reason="the bench group installs openai-agents")
        _, folder, steps = b8_env
        _bench(benchmark, lambda: run_sqlite_session(folder / "agents.sqlite", steps))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "python"))
    raise SystemExit(main())
