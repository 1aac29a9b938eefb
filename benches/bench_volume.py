"""B10: 10,000 open sessions (20-step histories) with 100 of them running turns, one process.

Every session is file-backed and open (``Session.open``: it holds its writer's lock), with a
history of 20 steps (a user message, then 20 tool calls and their results, then the answer),
written through the session like any other. Sessions are released when idle
(``Session.release``, what an agent does when its run ends): the host keeps 10,000 of them.
Then waves of 100 agents run one turn each on 100 of those sessions at once, against the
loopback mock server (`mock_openai.py`: ``STEPS`` model calls a turn), until ``WAVES`` waves have
run; each session runs one turn, on top of its history.

Reported: session·steps per second over the waves, the peak RSS of the process (``VmHWM``; the
goal: ≤ 1 GiB), and RSS per open session: settled RSS (`memory.settled_rss`) with the 10,000
sessions held after the waves, minus the settled RSS before they were made, over 10,000.
``FOLDLOG_B10_SESSIONS`` (10000), ``FOLDLOG_B10_RUNNING`` (100) and ``FOLDLOG_B10_WAVES`` (5) size
the run.

pytest benches/bench_volume.py --benchmark-json=b10.json
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from memory import peak_rss, settled_rss

SESSIONS = int(os.environ.get("FOLDLOG_B10_SESSIONS", "10000"))
RUNNING = int(os.environ.get("FOLDLOG_B10_RUNNING", "100"))
WAVES = int(os.environ.get("FOLDLOG_B10_WAVES", "5"))
STEPS = 20
GROUP = "B10 open sessions"


@pytest.mark.timeout(3600)
def test_b10_open_sessions(benchmark: Any, mock_server: str) -> None:
    import foldlog
    from foldlog.providers import OpenAICompatible
    from tests.support.history import noop_turn

    @foldlog.tool(read_only=True)
    async def noop(i: int) -> str:
        """Do nothing."""
        return "ok"

    root = Path(tempfile.mkdtemp(prefix="foldlog-b10-"))
    before = settled_rss()
    sessions = []
    try:
        for i in range(SESSIONS):
            s = foldlog.Session.open(root / f"s{i}.jsonl", system="Use the tool.")
            noop_turn(s, STEPS)
            s.release()  # flushes, then holds only the writer's lock
            sessions.append(s)
        log_bytes = sum((root / f"s{i}.jsonl").stat().st_size for i in range(min(SESSIONS, 100))) / min(
            SESSIONS, 100
        )
        waves = iter(range(10**9))

        async def wave(first: int) -> list[str]:
            provider = OpenAICompatible(
                mock_server, api_key="mock", model="mock", timeout=600.0, stall_timeout=600.0, max_retries=0
            )

            async def one(s: Any) -> str:
                agent = foldlog.Agent(provider, [noop], s, foldlog.Options(max_steps=STEPS + 5))
                return await agent.run("Check again.")

            try:
                chosen = [sessions[(first + k) % SESSIONS] for k in range(RUNNING)]
                return list(await asyncio.gather(*(one(s) for s in chosen)))
            finally:
                await provider.aclose()

        def run() -> None:
            start = time.perf_counter()
            done = 0
            for _ in range(WAVES):
                first = next(waves) * RUNNING
                outputs = asyncio.run(wave(first))
                assert outputs == ["done"] * RUNNING, outputs[:3]
                done += RUNNING * STEPS
            rate.append(done / (time.perf_counter() - start))

        rate: list[float] = []
        benchmark.group = GROUP
        benchmark.pedantic(run, rounds=1, warmup_rounds=0)
        assert all(s.released for s in sessions), "agents release their sessions when idle"
        held = settled_rss()
        peak = peak_rss()
    finally:
        for s in sessions:
            s.close()
        shutil.rmtree(root, ignore_errors=True)
    benchmark.extra_info.update(
        {
            "row": "B10",
            "workload": (
                f"{SESSIONS:,} open file-backed sessions ({STEPS}-step histories, {log_bytes / 1e3:.1f} kB "
                f"of log each), {RUNNING} running a turn at a time, {WAVES} waves, loopback mock server"
            ),
            "sessions": SESSIONS,
            "running": RUNNING,
            "steps_per_s": rate[0],
            "peak_rss": peak,
            "held_rss": held,
            "kib_per_session": (held - before) / SESSIONS / 1024,
            "log_bytes": log_bytes,
        }
    )


def active_bytes(session: Any, model: str) -> tuple[int, int, int]:
    """What an active session holds once a request body is built and still held (as while it is
    sent): the core's heap (`Log.heap_bytes()`: its lines, events, surface, derivation and the
    caches of counts, send plan and serialised messages) and the Python allocations the count,
    the request and the body made that are still alive (tracemalloc), with its log's bytes."""
    import gc
    import tracemalloc

    from foldlog.log.wire import chunked_body

    log_bytes = len(session._core.to_bytes())
    session.token_count(model)  # the tokenizer is loaded once per process: not the session's
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        session.token_count(model)
        wire = session.wire_request("keep")
        body = chunked_body(wire, {"model": model, "stream": True})
        gc.collect()
        python = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    core = session._core.heap_bytes()
    assert len(body) > 0
    return log_bytes, core, max(python, 0)


def test_b10_active_bytes_per_log_byte(benchmark: Any) -> None:
    """Issue 17.3's "while active, a session holds at most 2× its log bytes", measured (once, not
    timed) on a 20-step tool session as B10 holds them, on one whose tool results are 520 bytes
    of text, and on a session recorded from the whole corpus, each loaded from its log."""
    from foldlog import Session
    from tests.support.history import noop_turn, read_file_history
    from workloads import build_log

    model = "deepseek-chat"

    def loaded(s: Any) -> Any:
        again = Session.from_bytes(s._core.to_bytes())
        again.model = model
        return again

    small = Session(system="You are a careful agent.")
    noop_turn(small, STEPS)
    texts = read_file_history(STEPS)
    corpus = Session.load(build_log("active", min_bytes=1).path)
    corpus.model = model
    sides = {
        "B10 20-step history": loaded(small),
        "20 steps, 520-byte results": loaded(texts),
        "corpus": corpus,
    }
    figures = {}

    def run() -> None:
        for name, s in sides.items():
            figures[name] = active_bytes(s, model)

    benchmark.group = GROUP
    benchmark.pedantic(run, rounds=1, warmup_rounds=0)
    benchmark.extra_info.update(
        {
            "row": "B10",
            "active": {
                name: {"log_bytes": n, "core_bytes": core, "python_bytes": py, "ratio": (core + py) / n}
                for name, (n, core, py) in figures.items()
            },
        }
    )


# --- B10 on PostgreSQL: 100 concurrent writers on one server -------------------------------------

PG_SESSIONS = int(os.environ.get("FOLDLOG_B10_PG_SESSIONS", "1000"))


@pytest.mark.timeout(3600)
def test_b10_postgres_concurrent_writers(benchmark: Any, mock_server: str) -> None:
    """``PG_SESSIONS`` sessions with 20-step histories in one PostgreSQL database; waves of
    ``RUNNING`` agents each open one (its writer lock, a connection of the process's writer
    pool), run a turn against the mock server and close it, until ``WAVES`` waves have run. Then
    each session's log is loaded (the core checks each seq comes once, in order) and must hold
    its history and every turn run on it, whole: no write lost or doubled. Reported:
    session·steps/s over the waves."""
    import json

    import foldlog
    from bench_store import postgres_server, prepared_database
    from foldlog.providers import OpenAICompatible
    from foldlog.stores.postgres import PostgresStore
    from tests.support.history import noop_turn

    @foldlog.tool(read_only=True)
    async def noop(i: int) -> str:
        """Do nothing."""
        return "ok"

    template = foldlog.Session(system="Use the tool.")
    noop_turn(template, STEPS)
    head_line, history = template._core.to_bytes().split(b"\n", 1)
    head = json.loads(head_line)
    n_history = history.count(b"\n")
    runs: dict[int, int] = {}
    rate: list[float] = []

    with postgres_server() as server:
        dsn = prepared_database(server)
        with PostgresStore(dsn) as store:
            for i in range(PG_SESSIONS):  # one commit per session: the histories are not measured
                header = json.dumps({**head, "id": f"pg{i}"}, separators=(",", ":")).encode()
                writer = store.open_writer(f"pg{i}", header)
                try:
                    writer.append(history, 0, n_history)
                finally:
                    writer.close()

            async def wave(first: int) -> list[str]:
                provider = OpenAICompatible(
                    mock_server,
                    api_key="mock",
                    model="mock",
                    timeout=600.0,
                    stall_timeout=600.0,
                    max_retries=0,
                )

                async def one(i: int) -> str:
                    s = foldlog.Session.open(store, f"pg{i}")
                    try:
                        agent = foldlog.Agent(provider, [noop], s, foldlog.Options(max_steps=STEPS + 5))
                        return await agent.run("Check again.")
                    finally:
                        s.close()

                try:
                    chosen = [(first + k) % PG_SESSIONS for k in range(RUNNING)]
                    for i in chosen:
                        runs[i] = runs.get(i, 0) + 1
                    return list(await asyncio.gather(*(one(i) for i in chosen)))
                finally:
                    await provider.aclose()

            def run() -> None:
                start = time.perf_counter()
                for w in range(WAVES):
                    outputs = asyncio.run(wave(w * RUNNING))
                    assert outputs == ["done"] * RUNNING, outputs[:3]
                rate.append(WAVES * RUNNING * STEPS / (time.perf_counter() - start))

            benchmark.group = GROUP
            benchmark.pedantic(run, rounds=1, warmup_rounds=0)
            turn_sizes = set()
            for i, n in runs.items():
                loaded = foldlog.Session.from_bytes(store.read_log(f"pg{i}"))
                assert loaded.last_turn == 1 + n, (i, loaded.last_turn, n)
                assert (len(loaded) - n_history) % n == 0, (i, len(loaded))
                turn_sizes.add((len(loaded) - n_history) // n)
            assert len(turn_sizes) == 1, f"every turn is stored whole, once: {turn_sizes}"
    benchmark.extra_info.update(
        {
            "row": "B10 PostgreSQL",
            "workload": (
                f"{PG_SESSIONS:,} PostgreSQL sessions ({STEPS}-step histories), {RUNNING} agents at a time "
                f"each opening one, running a turn and closing it, {WAVES} waves, loopback mock server"
            ),
            "sessions": PG_SESSIONS,
            "running": RUNNING,
            "steps_per_s": rate[0],
            "events_per_turn": turn_sizes.pop(),
        }
    )
