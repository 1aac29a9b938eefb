"""B1r: resume to ready — B1 plus token counts and a compaction plan → first request body built.

On the ≥100k-event log of B2 (`workloads.log_100k`, ~46 MB, recorded like B1's), DeepSeek V4
counts:

- foldlog, warm: the log carries each event's count in its envelope (``"tokens"``, written when a
  session with its model set flushes). ``Session.load`` → ``Session.plan_history()``: the
  planner's input built in the core (its only builder) from the derived messages, the counts kept
  in the log and the events' fold ops (no message is turned into a Python object) → the Rust
  planner → the request body (``wire_json()``);
- foldlog, cold: the same on the log without counts (everything is tokenized);
- peer (`resume_peer.py`): Python + orjson load and derive, Hugging Face ``tokenizers``
  ``encode_batch`` of every message rendered with DeepSeek's layout, the tail rule in Python,
  the body with orjson.

Before timing, all three must give the same per-message counts, the same plan (prefix, tail
start, tokens before, tokens folded) and the same request messages.

pytest benches/bench_resume.py --benchmark-json=b1r.json
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from foldlog import Session
from foldlog.log.tokens import deepseek_tokenizer_path
from resume_peer import resume as peer_resume
from workloads import Workload, with_token_counts

MODEL = "deepseek-v4-flash"
TAIL_TOKENS = 16_384
KEEP = 2
# pinning a first user turn and keeping error results are foldlog rules the peer lacks: off
SETTINGS: dict[str, Any] = {
    "context_window": 1_000_000,
    "tail_tokens": TAIL_TOKENS,
    "min_recent_keep": KEEP,
    "pinned_user_turn_tokens": 0,
    "keep_policy": "none",
}
GROUP = "B1r resume to ready"
ROUNDS = 3
# the peer needs about a minute a round here (tokenizers); its answer check is a third run
PEER_ROUNDS = 2
# where the planner's per-message counts come from (the report quotes it)
COUNTS_SOURCE = "the counts kept in the log, read by the core (Session.plan_history)"


def foldlog_resume(path: str) -> tuple[list[int], Any, bytes]:
    s = Session.load(path)
    history = s.plan_history(MODEL)
    plan = history.plan(**SETTINGS)
    return history.tokens(), plan, s.wire_json()


@pytest.fixture(scope="module")
def hf() -> Any:
    tokenizers = pytest.importorskip("tokenizers")
    return tokenizers.Tokenizer.from_file(str(deepseek_tokenizer_path()))


@pytest.fixture(scope="module")
def checked(log_100k_workload: Workload, hf: Any) -> dict[str, Workload]:
    """Same answer on all sides: counts, plan and request messages."""
    cold = log_100k_workload
    warm = with_token_counts(cold, MODEL)
    counts, plan, body = foldlog_resume(str(warm.path))
    c_counts, c_plan, c_body = foldlog_resume(str(cold.path))
    p_counts, p_plan, p_body = peer_resume(str(cold.path), hf, TAIL_TOKENS, KEEP)
    assert counts == c_counts == p_counts
    assert plan.should_fold and plan.tail_start == c_plan.tail_start
    assert (plan.head, plan.tail_start, plan.tokens_before, plan.fold_tokens) == (
        p_plan.head,
        p_plan.tail_start,
        p_plan.tokens_before,
        p_plan.fold_tokens,
    )
    assert body == c_body
    assert orjson.loads(body) == orjson.loads(p_body)
    return {"warm": warm, "cold": cold}


def _info(benchmark: Any, w: Workload, role: str) -> None:
    benchmark.group = GROUP
    benchmark.extra_info.update(
        {
            "row": "B1r",
            "role": role,
            "events": w.events,
            "bytes": w.bytes,
            "workload": w.describe() + "; DeepSeek V4 counts",
            "counts_source": COUNTS_SOURCE,
        }
    )


def test_b1r_foldlog_warm(benchmark: Any, checked: dict[str, Workload]) -> None:
    w = checked["warm"]
    _info(benchmark, w, "foldlog, counts in the log")
    benchmark.pedantic(foldlog_resume, args=(str(w.path),), rounds=ROUNDS, warmup_rounds=0)


def test_b1r_foldlog_cold(benchmark: Any, checked: dict[str, Workload]) -> None:
    w = checked["cold"]
    _info(benchmark, w, "foldlog, no counts in the log")
    benchmark.pedantic(foldlog_resume, args=(str(w.path),), rounds=ROUNDS, warmup_rounds=0)


def test_b1r_python(benchmark: Any, checked: dict[str, Workload], hf: Any) -> None:
    w = checked["cold"]
    _info(benchmark, w, "Python + orjson + tokenizers")
    args = (str(w.path), hf, TAIL_TOKENS, KEEP)
    benchmark.pedantic(peer_resume, args=args, rounds=PEER_ROUNDS, warmup_rounds=0)
