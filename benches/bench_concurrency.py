"""B7: 1,000 concurrent sessions × 20 steps each against a loopback mock OpenAI-compatible server.

Each step is one model call (a ``noop`` tool call, then a final answer on the 20th), served by
`mock_openai.py` in its own process (SSE for foldlog, which streams; one JSON completion for the
Agents SDK, which does not). Both sides run in one process and one event loop, all sessions at once:

- foldlog: one ``foldlog.Agent`` per session, file-backed (``Session.open`` on a ``.jsonl`` file,
  the default ``"batch"`` durability: one fsync per step), sharing one
  ``foldlog.providers.OpenAICompatible`` client with its default pool (1,000 connections, what
  the SDK's client allows by default). With the provider's earlier pool of 64 connections the
  other ~940 requests queued inside httpcore, whose queue scan is O(queued × connections) per
  request: 50 sessions took 11 s a round and 1,000 did not finish a round in 10 minutes
  (py-spy: 62 % of the time in ``AsyncConnectionPool._assign_requests_to_connections``). The
  provider's HTTP/1.1 requests now go through its own pool (``providers/http/pool.py``: O(1)
  per request, connections kept alive past each stream's ``[DONE]``) on plain asyncio sockets
  (``providers/http/network.py``), under httpx;
- OpenAI Agents SDK: ``Runner.run`` with a ``SQLiteSession`` per session (one database file,
  the SDK's own defaults) and ``OpenAIChatCompletionsModel`` on one ``AsyncOpenAI`` client.

Every session must end with ``done`` after exactly 20 model calls (the mock answers by the number
of tool results in the request), checked on each round.

Reported: session·steps per second (sessions × steps / median wall time of a round) and the
resident memory per idle session. foldlog's agents release their sessions when a run ends
(``Options.release_when_idle``, the default): the log is dropped and loaded again at the next run.
Memory per idle session: after the last round, with every finished session still held (agent,
session and its writer for foldlog; the ``SQLiteSession`` for the SDK), RSS after a collection and
``malloc_trim`` (`memory.settled_rss`), minus the same once those sessions are dropped, divided
by their number — what holding them costs, without the round's fixed costs (HTTP client, TLS
context, event loop) or the heap's high-water mark.

The SDK needs minutes for 1,000 × 20 on 2 shared cores (it did not finish within 600 s before),
so its side runs a bounded number of sessions (``FOLDLOG_B7_PEER_SESSIONS``, default 100) at the
same 20 steps; the report states the bound. ``FOLDLOG_B7_SESSIONS`` (1000), ``FOLDLOG_B7_STEPS``
(20) and ``FOLDLOG_B7_ROUNDS`` (2) size the run.

pytest benches/bench_concurrency.py --benchmark-json=b7.json
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory import settled_rss

SESSIONS = int(os.environ.get("FOLDLOG_B7_SESSIONS", "1000"))
PEER_SESSIONS = int(os.environ.get("FOLDLOG_B7_PEER_SESSIONS", "100"))
STEPS = int(os.environ.get("FOLDLOG_B7_STEPS", "20"))
ROUNDS = int(os.environ.get("FOLDLOG_B7_ROUNDS", "2"))
GROUP = "B7 concurrent sessions"
POOL = 1000  # connections: what the OpenAI SDK's client allows by default


def _measure(
    benchmark: Any,
    label: str,
    sessions: int,
    one_round: Callable[[Path, list[Any]], list[str]],
    release: Callable[[Any], object],
) -> None:
    """Runs ``one_round(folder, held)`` ROUNDS times (a fresh folder each), checks every answer and
    records the rate and the idle memory per held session; ``release`` closes one held session."""
    root = Path(tempfile.mkdtemp(prefix="foldlog-b7-"))
    held: list[Any] = []
    counter = iter(range(10**9))

    def drop() -> None:
        for h in held:
            release(h)
        held.clear()

    def run() -> None:
        drop()
        folder = root / f"round{next(counter)}"
        folder.mkdir()
        outputs = one_round(folder, held)
        assert outputs == ["done"] * sessions, outputs[:3]
        assert len(held) == sessions

    try:
        benchmark.group = GROUP
        benchmark.pedantic(run, rounds=ROUNDS, warmup_rounds=0)
        count = len(held)
        with_held = settled_rss()
        drop()
        idle = (with_held - settled_rss()) / count / 1024
    finally:
        drop()
        shutil.rmtree(root, ignore_errors=True)
    median = benchmark.stats.stats.median
    benchmark.extra_info.update(
        {
            "row": "B7",
            "label": label,
            "workload": f"{sessions:,} concurrent sessions × {STEPS} steps, loopback mock server",
            "sessions": sessions,
            "steps": STEPS,
            "steps_per_s": sessions * STEPS / median,
            "idle_kib_per_session": idle,
        }
    )


@pytest.mark.timeout(1500)
def test_b7_foldlog(benchmark: Any, mock_server: str) -> None:
    import foldlog
    from foldlog.providers import OpenAICompatible

    @foldlog.tool(read_only=True)
    async def noop(i: int) -> str:
        """Do nothing."""
        return "ok"

    async def all_sessions(folder: Path, held: list[Any]) -> list[str]:
        # one provider (one pooled client) for every session, on this round's event loop
        provider = OpenAICompatible(
            mock_server,
            api_key="mock",
            model="mock",
            timeout=600.0,
            stall_timeout=600.0,
            max_retries=0,
        )
        assert provider.max_connections >= POOL

        async def one(i: int) -> str:
            session = foldlog.Session.open(folder / f"s{i}.jsonl", system="Use the tool.")
            agent = foldlog.Agent(provider, [noop], session, foldlog.Options(max_steps=STEPS + 5))
            out = await agent.run("go")
            held.append(agent)
            return out

        try:
            return list(await asyncio.gather(*(one(i) for i in range(SESSIONS))))
        finally:
            await provider.aclose()

    def one_round(folder: Path, held: list[Any]) -> list[str]:
        try:
            return asyncio.run(all_sessions(folder, held))
        finally:
            # the check: every log holds the whole run (20 model replies, 19 tool results)
            for agent in held[:3]:
                kinds = agent.session.events.types()
                assert kinds.count("assistant/message") == STEPS and kinds.count("tool/result") == STEPS - 1

    label = (
        f"foldlog Agent + OpenAICompatible ({POOL:,}-connection pool), file-backed sessions "
        "released when idle"
    )
    _measure(benchmark, label, SESSIONS, one_round, lambda agent: agent.session.close())


@pytest.mark.timeout(1500)
def test_b7_openai_agents(benchmark: Any, mock_server: str) -> None:
    agents = pytest.importorskip("agents")
    from openai import AsyncOpenAI

    agents.set_tracing_disabled(True)

    @agents.function_tool  # type: ignore[untyped-decorator]
    def noop(i: int) -> str:
        """Do nothing."""
        return "ok"

    async def all_sessions(folder: Path, held: list[Any]) -> list[str]:
        # the HTTP client belongs to the event loop of its round; one generous timeout for
        # connect, pool and read: hundreds of requests open at once on 2 busy cores
        client = AsyncOpenAI(base_url=mock_server, api_key="mock", max_retries=0, timeout=600.0)
        model = agents.OpenAIChatCompletionsModel(model="mock", openai_client=client)
        agent = agents.Agent(name="bench", instructions="Use the tool.", tools=[noop], model=model)
        db = folder / "sessions.db"

        async def one(i: int) -> str:
            session = agents.SQLiteSession(f"s{i}", db)
            result = await agents.Runner.run(agent, "go", session=session, max_turns=STEPS + 5)
            held.append(session)
            return str(result.final_output)

        try:
            return list(await asyncio.gather(*(one(i) for i in range(PEER_SESSIONS))))
        finally:
            await client.close()

    def one_round(folder: Path, held: list[Any]) -> list[str]:
        return asyncio.run(all_sessions(folder, held))

    label = "OpenAI Agents SDK Runner.run + SQLiteSession"
    if PEER_SESSIONS != SESSIONS:
        label += f" (bounded: {PEER_SESSIONS:,} sessions, not {SESSIONS:,})"
    _measure(benchmark, label, PEER_SESSIONS, one_round, lambda session: session.close())
