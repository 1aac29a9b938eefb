"""B1r (resume to ready) and B2 (one more step on a 100k-event session).

B2, incremental: on a loaded session of ≥100k events, append 3 events (step/start, the assistant
message, step/end), derive the messages (only the new node is projected), recount tokens and
re-plan when the token counter / planner are available, and build the request body
(`wire_json()`). Full recompute by the same library: rebuild the session from its log bytes and
do the same (derive everything, count everything, plan, body).

B1r (`Session.load` + token counts + a compaction plan → first request body, against Python +
orjson + Hugging Face `tokenizers`) needs `foldlog.Tokenizer` and the planner, which were not on
main when this suite was written: it is not measured yet and the report says so.

pytest benches/bench_resume.py --benchmark-json=resume.json
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest

import foldlog
from foldlog import Session
from workloads import Workload


def _available() -> dict[str, bool]:
    planning = importlib.util.find_spec("foldlog.planning") is not None
    return {"tokens": hasattr(foldlog, "Tokenizer"), "plan": planning}


def _missing() -> str:
    have = _available()
    gone = [
        what
        for what, ok in (
            ("token recount (foldlog.Tokenizer)", have["tokens"]),
            ("re-plan (planner)", have["plan"]),
        )
        if not ok
    ]
    return ("not in this build, so not timed: " + ", ".join(gone)) if gone else ""


def _info(benchmark: Any, w: Workload, role: str) -> None:
    benchmark.extra_info.update(
        {"row": "B2", "role": role, "events": w.events, "bytes": w.bytes, "workload": w.describe()}
    )
    if _missing():
        benchmark.extra_info["missing"] = "B2: " + _missing()


@pytest.fixture(scope="module")
def session(log_100k_workload: Workload) -> Session:
    s = Session.load(log_100k_workload.path)
    s.derive_messages()
    s.wire_json()
    return s


def one_step(s: Session, i: int) -> bytes:
    turn = s.last_turn
    s.append_event("step/start", {"turn": turn, "step": 1000 + i})
    s.add({"role": "assistant", "content": f"step {i}: done"})
    s.append_event("step/end", {"turn": turn, "step": 1000 + i})
    s.derive_messages()
    return s.wire_json()


def full_recompute(data: bytes) -> bytes:
    s = Session.from_bytes(data)
    s.derive_messages()
    return s.wire_json()


def test_b2_incremental(benchmark: Any, session: Session, log_100k_workload: Workload) -> None:
    benchmark.group = "B2 one more step"
    _info(benchmark, log_100k_workload, "foldlog")
    counter = iter(range(10**9))
    # the same answer as a full recompute of the grown log
    one_step(session, next(counter))
    assert full_recompute(session._core.to_bytes()) == session.wire_json()
    benchmark.pedantic(lambda: one_step(session, next(counter)), rounds=200, warmup_rounds=5)


def test_b2_full(benchmark: Any, session: Session, log_100k_workload: Workload) -> None:
    benchmark.group = "B2 one more step"
    _info(benchmark, log_100k_workload, "full recompute")
    data = session._core.to_bytes()
    benchmark.pedantic(full_recompute, args=(data,), rounds=3, warmup_rounds=1)


def step_without_body(s: Session, i: int) -> int:
    turn = s.last_turn
    s.append_event("step/start", {"turn": turn, "step": 10**6 + i})
    s.add({"role": "assistant", "content": f"step {i}: done"})
    s.append_event("step/end", {"turn": turn, "step": 10**6 + i})
    return len(s.derive_messages())


def test_b2_incremental_no_body(benchmark: Any, session: Session, log_100k_workload: Workload) -> None:
    """The step minus the request body: what the body's O(history) serialisation costs."""
    benchmark.group = "B2 one more step"
    _info(benchmark, log_100k_workload, "foldlog, no body")
    counter = iter(range(10**9))
    benchmark.pedantic(lambda: step_without_body(session, next(counter)), rounds=200, warmup_rounds=5)
