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

B1r from a checkpoint (issue 32, part 4): long sessions kept for months are compacted as they
go, so their surface stays bounded while their logs grow. On such sessions of 10k, 100k and 1M
events (the corpus recorded like B1's, a compaction folding all but the recent ~400 surface
nodes whenever the surface passes 2,000; counts in the log), the same resume to ready runs with
the checkpoint a released session leaves beside its log (only the tail is parsed) and without it
(the whole log is loaded). Both must give the same counts, plan and request body first.

pytest benches/bench_resume.py --benchmark-json=b1r.json
"""

from __future__ import annotations

import json
import os
from typing import Any

import orjson
import pytest

from foldlog import Session
from foldlog.log.checkpoint import checkpoint_path, is_partial
from foldlog.log.tokens import deepseek_tokenizer_path
from resume_peer import resume as peer_resume
from workloads import Recorder, Workload, cache_dir, corpus_conversations, with_token_counts

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


# --- from a checkpoint: long, compacted sessions -------------------------------------------------

LONG_SIZES = (10_000, 100_000, 1_000_000)
LONG_VERSION = 1
#: a compaction runs when the surface passes FOLD_AT nodes and keeps the recent KEEP_NODES
FOLD_AT = 2_000
KEEP_NODES = 400
LONG_SOURCE = "τ-bench + Claude Code sessions recorded in one session, compacted as it goes"


def _compact(s: Session, n: int) -> None:
    """Fold the surface after the system prompt up to a user message ~KEEP_NODES from the end."""
    seqs = s.surface_seqs()
    msgs = s.derive_messages()
    cut = next(i for i in range(len(seqs) - KEEP_NODES, 1, -1) if msgs[i]["role"] == "user")
    nodes = s.surface_nodes()
    first, last = nodes.index(seqs[1]), nodes.index(seqs[cut - 1])
    s.append_event("compaction/start", {"id": n})
    digest = {"role": "user", "content": f"[compaction {n}: {last - first + 1} messages folded]"}
    op = {"op": "fold", "start": nodes[first], "end": nodes[last], "keep": []}
    s.append_event("user/message", digest, surface_op=op, source_event_seqs=nodes[first : last + 1])
    s.append_event("compaction/end", {"id": n})


def long_session(events: int) -> Workload:
    """A session of ≥ ``events`` events compacted as it grew, its counts in the log, released
    (so its checkpoint is beside it); cached. Its twin ``…-whole.jsonl`` (a hard link, no
    checkpoint) is what a full load reads."""
    path = cache_dir() / f"long-v{LONG_VERSION}-{events}.jsonl"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists() and checkpoint_path(path).exists():
        info = json.loads(meta.read_text())
        if info.get("bytes") == path.stat().st_size:
            return Workload(f"long {events:,}", path, info["events"], info["bytes"], LONG_SOURCE)
    convs = corpus_conversations()
    s = Session(id=path.stem)
    rec = Recorder(s)
    rec.record({"role": "system", "content": "You are a careful agent. Use the tools."}, "")
    rep = folds = 0
    while len(s) < events:
        for conv in convs:
            for m in conv:
                if m["role"] != "system":
                    rec.record(m, f"~{rep}")
            rec.end_turn()
            if len(s.surface_nodes()) > FOLD_AT:
                folds += 1
                _compact(s, folds)
            if len(s) >= events:
                break
        rep += 1
    s.model = MODEL
    s.token_count()  # the surface's counts kept with its events, as a session with a model flushes them
    tmp = path.with_suffix(".tmp")
    s.save(tmp)
    tmp.replace(path)
    checkpoint_path(path).unlink(missing_ok=True)
    w = Session.open(path)
    w.release()  # writes the checkpoint
    w.close()
    whole = path.with_name(path.stem + "-whole.jsonl")
    whole.unlink(missing_ok=True)
    os.link(path, whole)
    n, size = len(s), path.stat().st_size
    meta.write_text(json.dumps({"events": n, "bytes": size, "folds": folds}))
    return Workload(f"long {events:,}", path, n, size, LONG_SOURCE)


def _whole(w: Workload) -> str:
    return str(w.path.with_name(w.path.stem + "-whole.jsonl"))


@pytest.fixture(scope="module", params=LONG_SIZES, ids=[f"{n // 1000}k" for n in LONG_SIZES])
def long_checked(request: pytest.FixtureRequest) -> Workload:
    """Same answer from the checkpoint and from the whole log: counts, plan, request body."""
    w = long_session(request.param)
    s = Session.load(w.path)
    assert is_partial(s._core), "the checkpoint was used"
    counts, plan, body = foldlog_resume(str(w.path))
    w_counts, w_plan, w_body = foldlog_resume(_whole(w))
    assert counts == w_counts and body == w_body
    assert (plan.head, plan.tail_start, plan.tokens_before) == (
        w_plan.head,
        w_plan.tail_start,
        w_plan.tokens_before,
    )
    return w


def _long_info(benchmark: Any, w: Workload, role: str) -> None:
    benchmark.group = "B1r resume to ready from a checkpoint"
    benchmark.extra_info.update(
        {
            "row": "B1r-ckpt",
            "role": role,
            "events": w.events,
            "bytes": w.bytes,
            "surface": len(Session.load(w.path).surface_nodes()),
            "workload": w.describe() + "; DeepSeek V4 counts in the log",
            "source": f"{LONG_SOURCE} (a fold when the surface passes {FOLD_AT:,} nodes); "
            "DeepSeek V4 counts in the log",
        }
    )


def test_b1r_checkpoint(benchmark: Any, long_checked: Workload) -> None:
    _long_info(benchmark, long_checked, "foldlog, from the checkpoint")
    benchmark.pedantic(foldlog_resume, args=(str(long_checked.path),), rounds=5, warmup_rounds=1)


def test_b1r_checkpoint_whole_log(benchmark: Any, long_checked: Workload) -> None:
    _long_info(benchmark, long_checked, "foldlog, the whole log")
    benchmark.pedantic(foldlog_resume, args=(_whole(long_checked),), rounds=ROUNDS, warmup_rounds=0)
