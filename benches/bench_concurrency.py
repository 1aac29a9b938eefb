"""B7: 1,000 concurrent sessions × 20 steps each against a loopback mock OpenAI-compatible server.

Each step is one model call (a ``noop`` tool call, then a final answer on the 20th), served by
`mock_openai.py` in its own process. foldlog: one `foldlog.Agent` per session in one process.
Peer: the OpenAI Agents SDK ``Runner.run`` with a ``SQLiteSession`` per session (one database
file). Reported: session·steps/s and resident memory per idle session (RSS growth while the
finished sessions are held, divided by their number).

FOLDLOG_B7_SESSIONS (default 1000) and FOLDLOG_B7_STEPS (default 20) size the run.

pytest benches/bench_concurrency.py --benchmark-json=b7.json
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

SESSIONS = int(os.environ.get("FOLDLOG_B7_SESSIONS", "1000"))
STEPS = int(os.environ.get("FOLDLOG_B7_STEPS", "20"))
GROUP = "B7 concurrent sessions"
WORKLOAD = f"{SESSIONS:,} sessions × {STEPS} steps, loopback mock server (SSE or JSON)"


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("mock_openai.py")), "--steps", str(STEPS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _record(benchmark: Any, label: str, held: list[Any], before: int) -> None:
    median = benchmark.stats.stats.median
    benchmark.extra_info.update(
        {
            "row": "B7",
            "label": label,
            "workload": WORKLOAD,
            "sessions": SESSIONS,
            "steps": STEPS,
            "steps_per_s": SESSIONS * STEPS / median,
            "idle_kib_per_session": (rss_bytes() - before) / max(1, len(held)) / 1024,
        }
    )


@pytest.mark.timeout(1800)
def test_b7_openai_agents(benchmark: Any, server: str) -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)

    @agents.function_tool  # type: ignore[untyped-decorator]
    def noop(i: int) -> str:
        """Do nothing."""
        return "ok"

    tmp = Path(tempfile.mkdtemp(prefix="foldlog-b7-"))
    held: list[Any] = []
    counter = iter(range(10**9))

    async def all_sessions(db: Path) -> list[str]:
        # the HTTP client belongs to the event loop of its round
        # one generous timeout for connect, pool and read: 1,000 requests open at once on 2 busy cores
        client = AsyncOpenAI(base_url=server, api_key="mock", max_retries=0, timeout=600.0)
        model = agents.OpenAIChatCompletionsModel(model="mock", openai_client=client)
        agent = agents.Agent(name="bench", instructions="Use the tool.", tools=[noop], model=model)

        async def one(i: int) -> str:
            session = agents.SQLiteSession(f"s{i}", db)
            result = await agents.Runner.run(agent, "go", session=session, max_turns=STEPS + 5)
            held.append(session)
            return str(result.final_output)

        try:
            return await asyncio.gather(*(one(i) for i in range(SESSIONS)))
        finally:
            await client.close()

    def run() -> None:
        held.clear()
        outputs = asyncio.run(all_sessions(tmp / f"round{next(counter)}.db"))
        assert outputs == ["done"] * SESSIONS

    before = rss_bytes()
    benchmark.group = GROUP
    benchmark.pedantic(run, rounds=int(os.environ.get("FOLDLOG_B7_ROUNDS", "3")), warmup_rounds=0)
    _record(benchmark, "OpenAI Agents SDK + SQLiteSession", held, before)


def test_b7_foldlog(benchmark: Any, server: str) -> None:
    import foldlog

    if not hasattr(foldlog, "Agent"):
        pytest.skip("foldlog.Agent is not on this build yet (B7 foldlog side not measured)")
    pytest.skip(
        "the foldlog side of B7 is not written yet: it needs foldlog.Agent with an OpenAI-compatible provider"
    )
