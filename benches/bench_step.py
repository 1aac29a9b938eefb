"""B2: one more step on a 100k-event session.

Incremental (role ``foldlog``): on a loaded session of ≥100k events, append 3 events
(step/start, the assistant message, step/end); derive (only the new node is projected);
recount (the session's running token total: only new events are counted); the compaction check
(``Compactor.maybe_compact`` as the agent calls it after a step, with no usage reported, so it
uses that local total; the planner runs only past the threshold, which this step does not
cross); and build the request body DeepSeek would send (``provider.encode_request``: the
chunked body over the core's cached message JSON, only the new message serialised).

Full recompute by the same library (role ``full recompute``): from the log bytes (the recorded
log, without token counts in its lines), load, derive everything, count everything, plan a
compaction, build the body. Both bodies are checked to be
byte-identical to each other and to the plain Python encoding before anything is timed.

pytest benches/bench_step.py --benchmark-json=step.json
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from foldlog import Session
from foldlog.agent.options import Options
from foldlog.compaction import Compactor
from foldlog.log.wire import ChunkedBody
from foldlog.providers.base import Request
from foldlog.providers.http.deepseek import DeepSeek
from workloads import Workload

MODEL = "deepseek-v4-flash"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "bash",
            "description": "Run a shell command",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    },
]


def _info(benchmark: Any, w: Workload, role: str) -> None:
    benchmark.group = "B2 one more step"
    benchmark.extra_info.update(
        {"row": "B2", "role": role, "events": w.events, "bytes": w.bytes, "workload": w.describe()}
    )


class Step:
    """The session, provider and compactor of the incremental step."""

    def __init__(self, path: str) -> None:
        self.session = Session.load(path)
        self.session.model = MODEL
        self.provider = DeepSeek(api_key="sk-bench", model=MODEL)
        # a window the history fits in, so the check is "not due" (the planner is B4's business)
        window = 4 * self.session.token_count(MODEL, TOOLS)
        self.options = Options(model=MODEL, context_window=window)
        self.compactor = Compactor(self.session, self.provider, self.options.compaction())
        self.loop = asyncio.new_event_loop()
        self.numbers: Iterator[int] = iter(range(10**9))
        self.body(self.session)  # the first request serialises the history once (what resume does)

    def body(self, s: Session) -> ChunkedBody:
        style = self.provider.wire_style()
        assert style is not None
        wire = s.wire_request(style)
        body = self.provider.encode_request(
            Request(messages=wire.messages, tools=TOOLS, model=MODEL, wire=wire)
        )
        assert isinstance(body, ChunkedBody)
        return body

    def step(self, *, with_body: bool = True) -> ChunkedBody | None:
        s = self.session
        i = next(self.numbers)
        turn = s.last_turn
        s.append_event("step/start", {"turn": turn, "step": 1000 + i})
        s.add({"role": "assistant", "content": f"step {i}: done"})
        s.append_event("step/end", {"turn": turn, "step": 1000 + i})
        self.loop.run_until_complete(self.compactor.maybe_compact(None, TOOLS))
        return self.body(s) if with_body else None

    def python_body(self, s: Session) -> bytes:
        """What the provider sent before the cached segments: every message encoded in Python."""
        request = Request(messages=s.wire_messages(), tools=TOOLS, model=MODEL)
        return self.provider.encode_body(self.provider.build_body(request))

    def full(self, data: bytes) -> ChunkedBody:
        s = Session.from_bytes(data)
        s.model = MODEL
        s.token_count(MODEL, TOOLS)
        s.plan_history(MODEL).plan(**self.options.compaction().plan_kwargs(force=False))
        return self.body(s)


@pytest.fixture(scope="module")
def step(log_100k_workload: Workload) -> Iterator[Step]:
    st = Step(str(log_100k_workload.path))
    yield st
    st.loop.close()


def test_b2_incremental(benchmark: Any, step: Step, log_100k_workload: Workload) -> None:
    _info(benchmark, log_100k_workload, "foldlog")
    body = step.step()
    assert body is not None
    sent = body.to_bytes()
    # the same bytes as a full recompute of the grown log and as the plain Python encoding
    assert step.full(step.session._core.to_bytes()).to_bytes() == sent
    assert step.python_body(step.session) == sent
    assert len(body) == len(sent)
    benchmark.pedantic(step.step, rounds=200, warmup_rounds=5)


def test_b2_full(benchmark: Any, step: Step, log_100k_workload: Workload) -> None:
    _info(benchmark, log_100k_workload, "full recompute")
    # the recorded log as it is on disk: no token counts in its lines, so everything is counted
    # (the grown session's own bytes carry the counts its flushes would write)
    data = log_100k_workload.path.read_bytes()
    assert b'"tokens":{' not in data
    benchmark.pedantic(step.full, args=(data,), rounds=3, warmup_rounds=0)


def test_b2_incremental_no_body(benchmark: Any, step: Step, log_100k_workload: Workload) -> None:
    """The step minus the request body: what building the body adds."""
    _info(benchmark, log_100k_workload, "foldlog, no body")
    benchmark.pedantic(lambda: step.step(with_body=False), rounds=200, warmup_rounds=5)
