"""Load under faults: 1,000 concurrent agent sessions in one process, each an `Agent` over its own
file-backed `Session`, against the loopback server, scripted to inject faults at random
(500 and 429 answers, streams cut mid-answer, malformed chunks, stalls) while about one turn in ten
is cancelled at a random moment.

Afterwards: every turn ended with an answer or a documented error, every log loads without
repair, its turns are closed, the send normalizer changes nothing, and memory stayed bounded.

Scale it with ``FOLDLOG_LOAD_SESSIONS`` (concurrent sessions, default 1000) and
``FOLDLOG_LOAD_SECONDS`` (how long new turns start, default 5); ``FOLDLOG_LOAD_SEED`` picks the
fault pattern; ``FOLDLOG_LOAD_DURABILITY`` the sessions' durability (default ``none``). The
figures are printed (``pytest -s`` shows them).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import resource
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.agent import Agent
from foldlog.agent.options import Options
from foldlog.errors import MaxStepsExceeded, ProviderError, RunCancelled
from foldlog.providers.http.openai_compat import OpenAICompatible
from foldlog.providers.http.retry import RetryPolicy
from foldlog.tools.registry import tool
from tests.support.http_server import LoopbackServer, Received, write_response

SESSIONS = int(os.environ.get("FOLDLOG_LOAD_SESSIONS", "1000"))
SECONDS = float(os.environ.get("FOLDLOG_LOAD_SECONDS", "5"))
SEED = int(os.environ.get("FOLDLOG_LOAD_SEED", "20261129"))
# No fsync by default: the flush runs on the event loop, so on a busy CI disk the fsyncs (not the
# faults under test) would set the pace; FOLDLOG_LOAD_DURABILITY=batch measures with them.
DURABILITY: Any = os.environ.get("FOLDLOG_LOAD_DURABILITY", "none")
CANCEL_RATE = 0.1  # share of turns cancelled at a random moment
TOOL_STEPS = 2  # tool calls per turn before the final answer
STALL_TIMEOUT = 0.5
# RSS growth allowed per concurrent session: its log, agent, provider state, buffers
RSS_PER_SESSION = 256 * 1024

# what a request gets, by weight; the rest is a good answer
FAULTS = {"http-500": 4, "http-429": 4, "cut": 6, "malformed": 4, "stall": 2}
GOOD = 80

# the documented ways a turn may end besides an answer (docs/reliability.md)
DOCUMENTED = (RunCancelled, MaxStepsExceeded, ProviderError)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    body = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + json.dumps(body, separators=(",", ":")).encode() + b"\n\n"


@dataclass
class FaultScript:
    """The loopback server's chat-completions handler. The fault a request gets is drawn from a
    generator seeded by (seed, session tag, request number of that session), so each session sees
    the same faults whatever the scheduling."""

    seed: int
    faults: Counter[str] = field(default_factory=Counter)
    requests: int = 0
    per_tag: Counter[str] = field(default_factory=Counter)

    def _fault(self, tag: str) -> str:
        n = self.per_tag[tag]
        self.per_tag[tag] += 1
        rng = random.Random(zlib.crc32(f"{self.seed}/{tag}/{n}".encode()))
        kinds = [*FAULTS, "good"]
        return rng.choices(kinds, weights=[*FAULTS.values(), GOOD])[0]

    async def __call__(self, req: Received, w: asyncio.StreamWriter) -> None:
        self.requests += 1
        msgs = req.json()["messages"]
        tag = next(str(m["content"]) for m in msgs if m["role"] == "user").split()[0]
        fault = self._fault(tag)
        self.faults[fault] += 1
        if fault in ("http-500", "http-429"):
            code = 500 if fault == "http-500" else 429
            retry_after = {"Retry-After": "0"} if code == 429 else None
            await write_response(w, code, b'{"error":{"message":"injected"}}', retry_after)
            return
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
        chunks = self._answer(msgs)
        if fault == "stall":
            w.write(b"".join(chunks[: len(chunks) // 2]))
            await w.drain()
            # hold the connection open and silent until the client's watchdog gives up
            try:
                await asyncio.wait_for(req.client_gone(), timeout=10 * STALL_TIMEOUT)
            except TimeoutError:
                pass
            return
        if fault == "cut":
            chunks = chunks[: len(chunks) // 2]
        elif fault == "malformed":
            chunks.insert(len(chunks) // 2, b'data: {"choices":[{"delta":{"content":"x\n\n')
        for c in chunks:
            w.write(c)
            await w.drain()

    @staticmethod
    def _answer(msgs: list[dict[str, Any]]) -> list[bytes]:
        last_user = max(
            i for i, m in enumerate(msgs) if m["role"] == "user" and str(m["content"]).startswith("s")
        )
        done = sum(1 for m in msgs[last_user:] if m["role"] == "tool")
        out = [_chunk({"role": "assistant", "content": ""})]
        if done < TOOL_STEPS:
            out += [_chunk({"content": "Looking "}), _chunk({"content": "it up."})]
            call = {"index": 0, "id": f"call_{len(msgs)}", "type": "function"}
            out.append(_chunk({"tool_calls": [{**call, "function": {"name": "lookup", "arguments": ""}}]}))
            out.append(
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"i": done})}}]})
            )
            out.append(_chunk({}, "tool_calls"))
        else:
            out += [_chunk({"content": w}) for w in ("The ", "answer ", "is ", "42.")]
            out.append(_chunk({}, "stop"))
        return [*out, b"data: [DONE]\n\n"]


@tool
async def lookup(i: int) -> str:
    """Look a value up (takes a moment, so cancellations land mid-tool too)."""
    await asyncio.sleep(0.001 * (i + 1))
    return f"value {i}"


@dataclass
class Tally:
    sessions: int = 0
    turns: int = 0
    cancels: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)


async def _slot(
    index: int, folder: Path, provider: OpenAICompatible, deadline: float, tally: Tally, rng: random.Random
) -> None:
    """One concurrent session after another until the deadline (at least one): each runs 1-3
    turns, and about one turn in ten is cancelled at a random moment."""
    loop = asyncio.get_running_loop()

    def cancel(agent: Agent) -> None:
        if agent.cancel():
            tally.cancels += 1

    n = 0
    while True:
        tag = f"s{index}-{n}"
        session = Session.open(folder / f"{tag}.jsonl", system="You answer questions.", durability=DURABILITY)
        tally.sessions += 1
        agent = Agent(provider, [lookup], session, Options(max_steps=8, max_stream_retries=2))
        try:
            for t in range(rng.randint(1, 3)):
                tally.turns += 1
                timer = (
                    loop.call_later(rng.uniform(0, 0.5), cancel, agent)
                    if rng.random() < CANCEL_RATE
                    else None
                )
                try:
                    await agent.run(f"{tag} turn {t}: what is the answer?")
                    tally.outcomes["answer"] += 1
                except DOCUMENTED as e:
                    tally.outcomes[type(e).__name__] += 1
                except Exception as e:  # anything else escaping is the failure this test looks for
                    tally.unexpected.append(f"{tag}: {type(e).__name__}: {e}")
                finally:
                    if timer is not None:
                        timer.cancel()
                if time.monotonic() >= deadline:
                    break
        finally:
            session.close()
        n += 1
        if time.monotonic() >= deadline:
            return


async def _load(folder: Path) -> tuple[Tally, FaultScript, dict[str, float]]:
    script = FaultScript(SEED)
    async with LoopbackServer(script, record=False, backlog=4096) as server:
        tally, figures = await _drive(folder, server.base_url)
    return tally, script, figures


async def _drive(folder: Path, base_url: str) -> tuple[Tally, dict[str, float]]:
    import httpx

    # one provider for every session, as a host would run it; its pool sized for the load
    transport = httpx.AsyncHTTPTransport(
        limits=httpx.Limits(max_connections=SESSIONS, max_keepalive_connections=0)
    )
    provider = OpenAICompatible(
        base_url,
        "sk-load",
        "mock",
        timeout=60,
        stall_timeout=STALL_TIMEOUT,
        retry=RetryPolicy(max_retries=3, base_delay=0.02, max_delay=0.2, max_replays=2),
        transport=transport,
    )
    tally = Tally()
    rng = random.Random(SEED)
    gc.collect()
    rss0 = _rss()
    peak = rss0
    t0 = time.monotonic()
    deadline = t0 + SECONDS

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, _rss())
            await asyncio.sleep(0.25)

    sampler = asyncio.create_task(sample())
    try:
        async with asyncio.timeout(SECONDS + 120):
            slots = [
                _slot(i, folder, provider, deadline, tally, random.Random(rng.random()))
                for i in range(SESSIONS)
            ]
            await asyncio.gather(*slots)
    finally:
        sampler.cancel()
        await provider.aclose()
    elapsed = time.monotonic() - t0
    gc.collect()
    figures = {"elapsed": elapsed, "rss0": rss0, "peak": max(peak, _rss()), "rss_end": _rss()}
    return tally, figures


def _raise_fd_limit(need: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            pytest.skip(f"{SESSIONS} concurrent sessions need {need} file descriptors; the limit is {hard}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def test_concurrent_sessions_under_faults(tmp_path: Path) -> None:
    # each session holds its log and its lock open, each request a socket at both ends
    _raise_fd_limit(SESSIONS * 5 + 256)
    folder = tmp_path / "sessions"
    tally, script, fig = asyncio.run(_load(folder))

    # every log loads as it is, its turns closed, and is sent exactly as it derives
    steps = needs_repair = open_turns = wire_changed = 0
    files = sorted(folder.glob("*.jsonl"))
    for p in files:
        s = Session.load(p)
        assert s.torn_tail is None, p
        needs_repair += s.normalized_dirty
        open_turns += s.open_turn is not None
        wire_changed += list(s.wire_messages()) != list(s.derive_messages())
        steps += sum(1 for t in s.events.types() if t == "step/start")
    growth = fig["peak"] - fig["rss0"]
    print(
        f"\nload: {SESSIONS} concurrent sessions for {SECONDS:g} s (seed {SEED}), "
        f"{fig['elapsed']:.1f} s in all\n"
        f"  sessions {tally.sessions}, turns {tally.turns}, steps {steps}, requests {script.requests}\n"
        f"  faults injected: {dict(sorted((k, v) for k, v in script.faults.items() if k != 'good'))}\n"
        f"  cancellations {tally.cancels}; outcomes {dict(tally.outcomes)}\n"
        f"  logs {len(files)}: needing repair {needs_repair}, open turns {open_turns}, "
        f"send normalizer changed {wire_changed}\n"
        f"  RSS {fig['rss0'] / 2**20:.0f} MiB -> peak {fig['peak'] / 2**20:.0f} MiB, "
        f"end {fig['rss_end'] / 2**20:.0f} MiB: {growth / SESSIONS / 1024:.0f} KiB per concurrent session"
    )
    assert tally.unexpected == [], tally.unexpected[:5]
    assert len(files) == tally.sessions
    assert sum(tally.outcomes.values()) == tally.turns
    assert needs_repair == 0 and open_turns == 0 and wire_changed == 0
    assert growth < SESSIONS * RSS_PER_SESSION, f"RSS grew {growth / 2**20:.0f} MiB"
    # the run exercised what it claims to
    assert all(script.faults[k] > 0 for k in FAULTS), script.faults
    assert tally.cancels > 0 and tally.outcomes["answer"] > 0
