"""B4: plan a compaction of a 100k-message history.

foldlog: the Rust planner over cached per-message token counts (``PlanHistory.plan``), and the cold
path where the core first builds the planner input from the session's log, estimating every
message's tokens (``Session.plan_history`` with a model without an exact tokenizer). Peer:
LangChain's ``trim_messages`` with ``count_tokens_approximately`` choosing the recent tail under the
same budget (it counts every message on every call).

The history is built from the real transcripts in ``../shared/corpus`` (Claude Code, Codex,
τ-bench), repeated with fresh call ids until it holds 100k messages, and recorded in a session. For
the answer check both sides get the same token counts (LangChain's approximate counter, given to
foldlog's planner input with ``PlanHistory.with_tokens``): the same tail (up to one call group, which
foldlog keeps whole).

pytest benches/bench_plan.py --benchmark-only
python benches/bench_plan.py [--messages 100000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from foldlog import Session
from tests.compaction.corpus_histories import all_histories, corpus_dir

N_MESSAGES = 100_000
WINDOW = 1_000_000
TAIL = 16_384


@cache
def workload(n: int = N_MESSAGES) -> list[dict[str, Any]]:
    """Real histories one after another (each repeat with its own call ids) up to ``n`` messages."""
    sources = [h for _, h in all_histories() if h]
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding assistant."}]
    rep = 0
    while len(out) < n:
        for h in sources:
            for m in h:
                if m["role"] == "system":
                    continue
                if m["role"] == "assistant" and not m.get("content") and not m.get("tool_calls"):
                    continue  # derives no message (kept in a log only for its usage)
                m = copy.deepcopy(m)
                if m.get("tool_calls"):
                    for c in m["tool_calls"]:
                        c["id"] = f"{c['id']}~{rep}"
                        c["function"]["arguments"] = _valid_json(c["function"]["arguments"])
                if m["role"] == "tool":
                    m["tool_call_id"] = f"{m.get('tool_call_id')}~{rep}"
                out.append(m)
            rep += 1
            if len(out) >= n:
                break
    del out[n:]
    # never end inside a call group
    while out[-1]["role"] != "user":
        out.pop()
    return out


def _valid_json(text: Any) -> str:
    # some corpus arguments are redacted or cut; the peer's converter needs parseable JSON
    try:
        json.loads(text)
        return str(text)
    except (TypeError, ValueError):
        return json.dumps({"raw": str(text)})


@cache
def langchain_messages(n: int = N_MESSAGES) -> list[Any]:
    from langchain_core.messages import convert_to_messages

    return list(convert_to_messages(workload(n)))


@cache
def cached_counts(n: int = N_MESSAGES) -> list[int]:
    """Per-message counts by LangChain's approximate counter: the same numbers for both sides."""
    from langchain_core.messages.utils import count_tokens_approximately

    return [count_tokens_approximately([m]) for m in langchain_messages(n)]


# a model without an exact tokenizer: the core estimates every message
ESTIMATE_MODEL = "no-exact-tokenizer"


@cache
def session(n: int = N_MESSAGES) -> Session:
    s = Session()
    for m in workload(n):
        s.add(m)
    return s


def plan_settings() -> dict[str, Any]:
    # pinning and keeping user turns are foldlog features LangChain lacks; the tail rule is compared
    return {"context_window": WINDOW, "tail_tokens": TAIL, "min_recent_keep": 1, "pinned_user_turn_tokens": 0}


def langchain_trim(n: int = N_MESSAGES) -> list[Any]:
    from langchain_core.messages import trim_messages
    from langchain_core.messages.utils import count_tokens_approximately

    return trim_messages(
        langchain_messages(n),
        max_tokens=TAIL + cached_counts(n)[0],  # the system message rides along on both sides
        token_counter=count_tokens_approximately,
        strategy="last",
        include_system=True,
        start_on=("human", "ai"),
        allow_partial=False,
    )


def check_same_answer(n: int = N_MESSAGES) -> dict[str, Any]:
    """Both sides pick the same recent tail: LangChain drops a cut call group's results, foldlog
    moves back to keep the call with them; apart from that group the tails are identical."""
    msgs = workload(n)
    history = session(n).plan_history(ESTIMATE_MODEL).with_tokens(cached_counts(n))
    plan = history.plan(**plan_settings())
    trimmed = langchain_trim(n)
    lc_tail = len(trimmed) - 1  # minus the system message
    lc_start = len(msgs) - lc_tail
    ours = plan.tail_start
    assert ours <= lc_start, (ours, lc_start)
    between = msgs[ours:lc_start]
    assert not between or (
        between[0]["role"] == "assistant" and all(m["role"] == "tool" for m in between[1:])
    ), "the tails differ by more than one call group"
    assert plan.head == 1 and plan.should_fold
    return {"messages": len(msgs), "tail_foldlog": len(msgs) - ours, "tail_langchain": lc_tail}


def _skip_without_peers() -> None:
    if not corpus_dir().is_dir():
        pytest.skip("../shared/corpus is not available")
    try:
        import langchain_core  # noqa: F401
    except ImportError:
        pytest.skip("langchain-core is not installed (bench dependency group)")


@pytest.fixture(scope="module")
def prepared() -> Any:
    _skip_without_peers()
    info = check_same_answer()
    history = session().plan_history(ESTIMATE_MODEL).with_tokens(cached_counts())
    return history, info


def test_b4_foldlog_plan_cached(benchmark: Any, prepared: Any) -> None:
    history, info = prepared
    benchmark.extra_info.update(info)
    plan = benchmark(lambda: history.plan(**plan_settings()))
    assert plan.should_fold


def test_b4_foldlog_plan_cold(benchmark: Any, prepared: Any) -> None:
    s = session()
    plan = benchmark(lambda: s.plan_history(ESTIMATE_MODEL).plan(**plan_settings()))
    assert plan.should_fold


def test_b4_langchain_trim_messages(benchmark: Any, prepared: Any) -> None:
    out = benchmark.pedantic(langchain_trim, rounds=5, iterations=1, warmup_rounds=1)
    assert len(out) > 1


def _time(fn: Callable[[], Any], rounds: int) -> list[float]:
    fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--messages", type=int, default=N_MESSAGES)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    n = args.messages
    info = check_same_answer(n)
    msgs, s = workload(n), session(n)
    history = s.plan_history(ESTIMATE_MODEL).with_tokens(cached_counts(n))
    size = sum(len(str(m.get("content") or "")) for m in msgs)
    rows = [
        ("foldlog plan (cached counts)", _time(lambda: history.plan(**plan_settings()), args.rounds * 5)),
        (
            "foldlog plan + fold list",
            _time(lambda: history.plan(**plan_settings()).fold, args.rounds * 5),
        ),
        (
            "foldlog cold (estimate every message, build input, plan)",
            _time(lambda: s.plan_history(ESTIMATE_MODEL).plan(**plan_settings()), args.rounds),
        ),
        ("langchain trim_messages", _time(lambda: langchain_trim(n), args.rounds)),
    ]
    print(f"B4 — {info['messages']:,} messages ({size / 1e6:.1f} MB of text) from the corpus;")
    print(f"tail: foldlog {info['tail_foldlog']} messages, langchain {info['tail_langchain']}")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print("| side | median ms | min–max | vs langchain |")
    print("|---|---:|---:|---:|")
    peer = statistics.median(rows[-1][1])
    for name, times in rows:
        med = statistics.median(times)
        print(f"| {name} | {med:.3f} | {min(times):.3f}–{max(times):.3f} | {peer / med:.0f}x |")


if __name__ == "__main__":
    main()
