"""With an exact tokenizer for the provider's model, the compactor plans on the session's cached
per-event counts and, without reported usage, triggers on the session's running total."""

from __future__ import annotations

import asyncio
from typing import Any

from foldlog import Options, Session
from foldlog.compaction import Compactor
from foldlog.log.tokens import Tokenizer
from foldlog.providers import Scripted
from tests.support.history import add_tool_steps

MODEL = "deepseek-v4-flash"
TOOLS = [{"type": "function", "function": {"name": "fetch", "parameters": {"type": "object"}}}]


def history(n: int) -> Session:
    s = Session(system="You are a test assistant.")
    add_tool_steps(
        s,
        n,
        user="fetch the pages",
        tool="fetch",
        result=lambda i: f"page {i}: " + "word " * 400,
        answer=None,
    )
    return s


def compactor(s: Session, window: int, summaries: list[Any]) -> tuple[Compactor, Scripted]:
    summarizer = Scripted(summaries, model=MODEL)
    opts = Options(context_window=window, summary_provider=summarizer, tail_tokens=500, prune_min_bytes=10**9)
    return Compactor(s, Scripted([], model=MODEL), opts.compaction()), summarizer


def test_counts_and_the_local_total_are_the_sessions_exact_ones() -> None:
    s = history(6)
    c, _ = compactor(s, 100_000, [])
    tok = Tokenizer.for_model(MODEL)
    exact = [tok.count_message(m) for m in s.derive_messages()]
    assert c.plan().history.tokens() == exact == s.token_counts(MODEL)
    assert c.plan().tokenizer == "deepseek-v4"
    total = sum(exact) + tok.count_tools(TOOLS) + tok.request_overhead()
    assert c._local_prompt_tokens(TOOLS) == total == s.token_count(MODEL, TOOLS)
    s.add({"role": "user", "content": "one more"})
    assert c._local_prompt_tokens(TOOLS) == total + tok.count_message({"role": "user", "content": "one more"})


def test_without_usage_the_running_total_decides() -> None:
    s = history(6)
    total = s.token_count(MODEL, TOOLS)
    below, summarizer = compactor(s, int(total / 0.5), [{"content": "## Goal\n- fetch"}])
    asyncio.run(below.maybe_compact(None, TOOLS))
    assert summarizer.calls == 0 and "compaction/start" not in s.events.types()
    above, summarizer = compactor(s, int(total / 0.9), [{"content": "## Goal\n- fetch"}])
    asyncio.run(above.maybe_compact(None, TOOLS))
    assert summarizer.calls == 1
    assert s.events.types().count("compaction/end") == 1
    assert s.token_count(MODEL, TOOLS) < total


def test_the_plan_is_the_cores_plan_of_the_sessions_counts() -> None:

    s = history(12)
    c, _ = compactor(s, 4_000, [])
    preview = c.plan(force=False)
    # the planner's input is the core's, on the session's cached exact counts
    core = s.plan_history(MODEL)
    assert preview.history.columns() == core.columns()
    assert preview.history.tokens() == s.token_counts(MODEL)
    expected = core.plan(**c.settings.plan_kwargs(force=False))
    plan = preview.plan
    assert (plan.head, plan.tail_start, plan.fold, plan.should_fold) == (
        expected.head,
        expected.tail_start,
        expected.fold,
        expected.should_fold,
    )
    assert plan.should_fold
    assert (preview.pinned, preview.folded, preview.tail) == (2, len(plan.fold), len(core) - plan.tail_start)
