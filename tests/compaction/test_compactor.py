"""The Compactor end to end: an Agent with the Scripted provider reporting growing prompt tokens
against a small window."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from foldlog import Agent, Options, Session, tool
from foldlog.compaction import ELISION, Compactor, planning, unfinished_compaction
from foldlog.compaction.settings import KeepPolicy
from foldlog.compaction.summary import SUMMARY_SYSTEM_PROMPT
from foldlog.events import CompactionDone, CompactionStarted, Notice, Usage
from foldlog.providers import Scripted
from foldlog.providers.base import Request
from tests.compaction.plan_checks import digest_indices

WINDOW = 4_000
BIG = 4_000  # characters per tool output: about 1,000 estimated tokens


def _out(n: int) -> str:
    return f"output {n}: " + "x" * BIG


@tool(read_only=True)
def fetch(n: int) -> str:
    """Fetch a large page."""
    return _out(n)


@tool(read_only=True)
def fail(n: int) -> str:
    """Always fails."""
    return f"error: page {n} not found " + "e" * BIG


def step(n: int, prompt: int, name: str = "fetch") -> dict[str, Any]:
    return {
        "content": "",
        "tool_calls": [{"id": f"c{n}", "name": name, "arguments": {"n": n}}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 5},
    }


def answer(prompt: int, text: str = "done") -> dict[str, Any]:
    return {"content": text, "usage": {"prompt_tokens": prompt, "completion_tokens": 5}}


def summary_reply(text: str = "## Goal\n- fetch pages") -> dict[str, Any]:
    return {"content": text, "usage": {"prompt_tokens": 50, "completion_tokens": 20, "cache_hit_tokens": 10}}


class Run:
    """An agent over a fresh session, recording sink events and every request it sends."""

    def __init__(
        self,
        replies: list[Any],
        summaries: list[Any] | None = None,
        session: Session | None = None,
        tools: tuple[Any, ...] = (fetch,),
        **opts: Any,
    ) -> None:
        self.session = session or Session(system="You are a test assistant.")
        self.events: list[Any] = []
        self.wire_at_request: list[list[Mapping[str, Any]]] = []
        self.summarizer = Scripted(summaries if summaries is not None else [summary_reply()])
        opts.setdefault("prune_min_bytes", 10**9)  # prune has its own tests; here the fold is under test
        options = Options(context_window=WINDOW, summary_provider=self.summarizer, **opts)
        self.provider = Scripted([self._checked(r) for r in replies], context_window=WINDOW)
        self.agent = Agent(self.provider, list(tools), self.session, options, sink=self.events.append)

    def _checked(self, r: Any) -> Callable[[Request], Any]:
        def fn(req: Request) -> Any:
            # the request invariant: exactly the session's wire messages at that moment
            wire = self.session.wire_messages()
            assert list(req.messages) == wire
            self.wire_at_request.append(wire)
            return r

        return fn

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]

    def types(self) -> list[str]:
        return [e["type"] for e in self.session.events]


def test_fold_fires_past_80_percent_and_the_next_request_carries_the_new_surface() -> None:
    r = Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)])
    before_rewrite = r.session.rewrite_version
    assert r.agent.run_sync("fetch the pages") == "done"

    types = r.types()
    s = types.index("compaction/start")
    assert types[s:].count("compaction/end") == 1
    assert types[s : types.index("compaction/end") + 1] == [
        "compaction/start",
        "compaction/summary",
        "user/message",
        "compaction/end",
    ]
    assert r.session.rewrite_version > before_rewrite
    summary = next(e for e in r.session.events if e["type"] == "compaction/summary")["data"]
    digest = r.session.events[types.index("compaction/summary") + 1]
    assert digest["surfaceOp"]["op"] == "fold"
    assert sorted(digest["sourceEventSeqs"]) == sorted(summary["folded"])
    assert summary["mechanical"] is False and summary["model"] == "scripted"
    assert summary["tokensAfter"] < summary["tokensBefore"]

    # the folded events are still in the log
    for seq in summary["folded"]:
        assert r.session.events[seq]["type"] in ("assistant/message", "tool/result")
    # the surface: system + pinned first user turn + digest + tail (calls 3 and its result)
    msgs = r.session.derive_messages()
    assert [m["role"] for m in msgs[:3]] == ["system", "user", "user"]
    assert digest_indices(r.session) == [2] and "## Goal" in msgs[2]["content"]
    assert msgs[3]["tool_calls"][0]["id"] == "c3" and msgs[4]["content"] == _out(3)
    # the request after the fold carried exactly the new surface (checked in every request)
    assert len(r.wire_at_request) == 4
    assert r.wire_at_request[3][2]["content"].startswith(planning.DIGEST_OPEN)
    assert not any(m.get("content") == _out(1) for m in r.wire_at_request[3])
    # the sink saw the compaction and its usage
    [started] = r.of(CompactionStarted)
    [done] = r.of(CompactionDone)
    assert started.trigger == "auto" and done.trigger == "auto"
    assert done.folded == 4 and done.summary.startswith("## Goal") and not done.mechanical
    assert [u.source for u in r.of(Usage)].count("compaction") == 1
    # the summariser got no tools and the transcript in its format
    [req] = r.summarizer.requests
    assert req.tools == () and req.messages[0]["content"] == SUMMARY_SYSTEM_PROMPT
    transcript = req.messages[1]["content"]
    assert "[assistant calls fetch] {n} (1 keys)" in transcript
    assert "[tool fetch result] output 1:" in transcript


def test_soft_notice_once_and_nothing_below_the_trigger() -> None:
    r = Run([step(1, 2100), step(2, 2500), answer(3000)])
    r.agent.run_sync("go")
    soft = [n for n in r.of(Notice) if "compacted at 80%" in n.message]
    assert len(soft) == 1 and soft[0].level == "info"
    assert "compaction/start" not in r.types()
    assert r.summarizer.calls == 0


def test_mechanical_fallback_after_an_error_and_a_retry() -> None:
    boom = RuntimeError("summariser down")
    r = Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)], summaries=[boom, boom])
    r.agent.run_sync("go")
    assert r.summarizer.calls == 2  # one retry
    [done] = r.of(CompactionDone)
    assert done.mechanical
    summary = next(e for e in r.session.events if e["type"] == "compaction/summary")["data"]
    assert summary["mechanical"] is True
    # the structured digest (tests/compaction/test_digest.py has its sections)
    assert summary["summary"].startswith(
        "4 earlier message(s) were folded here to free context, mechanically"
    )
    assert "kept in the session log, events #" in summary["summary"]
    assert any("summary was unavailable" in n.message and n.level == "warn" for n in r.of(Notice))
    assert digest_indices(r.session) == [2]


def test_empty_summary_is_retried_once() -> None:
    r = Run(
        [step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)],
        summaries=[{"content": ""}, summary_reply()],
    )
    r.agent.run_sync("go")
    assert r.summarizer.calls == 2
    assert not r.of(CompactionDone)[0].mechanical


def test_no_retry_after_a_timeout() -> None:
    r = Run(
        [step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)],
        summaries=[{"content": "", "hang": True}, summary_reply()],
        summary_timeout=0.05,
    )
    r.agent.run_sync("go")
    assert r.summarizer.calls == 1
    assert r.of(CompactionDone)[0].mechanical


def test_stuck_guard_latches_and_manual_compaction_still_works() -> None:
    # the prompt stays above the trigger after every fold: the window is too small for the tail
    replies = [step(i, 3500) for i in range(1, 8)] + [answer(3500)]
    r = Run(replies, summaries=[summary_reply(f"## Goal\n- fold {i}") for i in range(6)], stuck_limit=2)
    r.agent.run_sync("go")
    assert r.types().count("compaction/start") == 2  # then the latch holds
    warn = [n for n in r.of(Notice) if n.level == "warn" and "too small" in n.message]
    assert len(warn) == 1
    compactor = r.agent.compactor
    assert compactor.stuck
    r.provider.add(r._checked(step(99, 3500)))
    # a manual compaction bypasses the latch
    asyncio.run(r.agent.compact("the pages"))
    assert r.types().count("compaction/start") == 3
    start = [e for e in r.session.events if e["type"] == "compaction/start"][-1]["data"]
    assert start["trigger"] == "manual" and start["focus"] == "the pages"
    assert (
        "Additional focus for this compaction (prioritize keeping this):\nthe pages"
        in (r.summarizer.requests[-1].messages[1]["content"])
    )
    # the latch resets once a request fits again
    asyncio.run(compactor.maybe_compact(1000, []))
    assert not compactor.stuck and compactor.consecutive == 0


def test_stuck_guard_counts_folds_on_consecutive_steps_and_a_step_without_one_resets_it() -> None:
    session = Session(system="s")
    session.add({"role": "user", "content": "go"})
    events: list[Any] = []
    summarizer = Scripted([summary_reply(f"## Goal\n- fold {i}") for i in range(5)])
    opts = Options(context_window=WINDOW, summary_provider=summarizer, stuck_limit=2, prune_min_bytes=10**9)
    c = Compactor(session, Scripted([]), opts.compaction(), events.append)

    def tool_step(i: int) -> None:
        session.add({"role": "assistant", "content": "", "tool_calls": [_call(f"s{i}")]})
        session.add({"role": "tool", "tool_call_id": f"s{i}", "name": "fetch", "content": _out(i)})

    def check(prompt_tokens: int) -> None:  # the check the agent makes at the end of a step
        asyncio.run(c.maybe_compact(prompt_tokens, []))

    for i in range(3):
        tool_step(i)
    check(3500)  # past the trigger: folds
    assert (c.consecutive, c.stuck) == (1, False)
    check(3500)  # still past it, but nothing left to fold: a step without a compaction
    assert (c.consecutive, c.stuck) == (0, False)
    for i in range(3, 6):
        tool_step(i)
    check(3500)  # folds: the first of a new run of consecutive steps, no latch
    assert (c.consecutive, c.stuck) == (1, False)
    for i in range(6, 9):
        tool_step(i)
    check(3500)  # folds on the very next step: at stuck_limit, auto-compaction pauses
    assert (c.consecutive, c.stuck) == (2, True)
    warn = [e for e in events if isinstance(e, Notice) and e.level == "warn"]
    assert len(warn) == 1 and "folded on 2 consecutive steps" in warn[0].message
    assert "too small for the recent tail plus the pinned prefix" in warn[0].message
    for i in range(9, 12):
        tool_step(i)
    check(3500)  # latched: no compaction however large the prompt
    assert [e["type"] for e in session.events].count("compaction/start") == 3
    check(1000)  # a request that fits resets the count and the latch
    assert (c.consecutive, c.stuck) == (0, False)


def test_economics_skip_small_folds_unless_forced() -> None:
    session = Session(system="s")
    session.add({"role": "user", "content": "go"})
    for i in range(3):
        session.add({"role": "assistant", "content": "", "tool_calls": [_call(f"k{i}")]})
        session.add({"role": "tool", "tool_call_id": f"k{i}", "name": "fetch", "content": "small result"})
    session.add({"role": "assistant", "content": "y" * 7000})  # the tail holds the budget
    session.add({"role": "user", "content": "next"})
    events: list[Any] = []
    summarizer = Scripted([summary_reply()])
    opts = Options(context_window=WINDOW, tail_tokens=1760, summary_provider=summarizer)
    c = Compactor(session, Scripted([]), opts.compaction(), events.append)
    asyncio.run(c.maybe_compact(3300, []))  # past 80%, under 90%: the fold (~50 tokens) is uneconomic
    assert "compaction/start" not in [e["type"] for e in session.events]
    asyncio.run(c.maybe_compact(3700, []))  # past 90%: forced
    assert [e["type"] for e in session.events].count("compaction/start") == 1
    assert summarizer.calls == 1


def _call(cid: str, name: str = "fetch", args: str = '{"n": 1}') -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def test_keep_policy_errors_keeps_the_failing_call_group() -> None:
    r = Run(
        [step(1, 1000), step(2, 2000, "fail"), step(3, 3300), answer(1500)],
        tools=(fetch, fail),
    )
    r.agent.run_sync("go")
    msgs = r.session.derive_messages()
    roles = [m["role"] for m in msgs]
    # system, user, the failing call + its result (kept), the digest, the tail
    assert roles[:5] == ["system", "user", "assistant", "tool", "user"]
    assert msgs[2]["tool_calls"][0]["id"] == "c2" and msgs[3]["content"].startswith("error: page 2")
    assert digest_indices(r.session) == [4]
    summary = next(e for e in r.session.events if e["type"] == "compaction/summary")["data"]
    assert len(summary["kept"]) == 2


def test_keep_policy_user_marked() -> None:
    session = Session(system="s")
    session.add({"role": "user", "content": "go"})
    session.add({"role": "assistant", "content": "a" * 4000})
    marked = session.add({"role": "user", "content": "[keep] the deploy key is in vault/ci " + "k" * 8000})
    session.add({"role": "assistant", "content": "b" * 4000})
    session.add({"role": "assistant", "content": "c" * 7000})
    session.add({"role": "user", "content": "next"})
    cases: tuple[tuple[KeepPolicy, list[int]], ...] = (("user_marked", [marked]), ("errors", []))
    for policy, kept in cases:
        s2 = Session.from_bytes(_bytes(session))
        c = Compactor(
            s2,
            Scripted([]),
            Options(
                context_window=WINDOW, keep_policy=policy, summary_provider=Scripted([summary_reply()])
            ).compaction(),
        )
        result = asyncio.run(c.compact("manual", force=True))
        assert result is not None
        summary = next(e for e in s2.events if e["type"] == "compaction/summary")["data"]
        assert summary["kept"] == kept


def _bytes(session: Session) -> bytes:
    return session._core.to_bytes()


def test_prune_first_and_stop_when_that_is_enough(tmp_path: Path) -> None:
    session = Session(system="s")
    session.add({"role": "user", "content": "go"})
    session.add({"role": "assistant", "content": "", "tool_calls": [_call("big")]})
    big = session.add({"role": "tool", "tool_call_id": "big", "name": "fetch", "content": "z" * 6000})
    session.add({"role": "assistant", "content": "q" * 1000})
    session.add({"role": "assistant", "content": "t" * 7000})
    session.add({"role": "user", "content": "next"})
    summarizer = Scripted([summary_reply()])
    events: list[Any] = []
    c = Compactor(
        session,
        Scripted([]),
        Options(context_window=WINDOW, summary_provider=summarizer).compaction(),
        events.append,
    )
    asyncio.run(c.maybe_compact(3300, []))
    assert summarizer.calls == 0  # pruning alone brought it under the trigger
    types = [e["type"] for e in session.events]
    assert types[-3:] == ["compaction/start", "tool/result", "compaction/end"]
    elided = session.events[-2]
    assert elided["surfaceOp"] == {"op": "replace", "start": big, "end": big}
    assert elided["sourceEventSeqs"] == [big]
    assert elided["data"]["message"]["content"] == ELISION.format(name="fetch", n=6000)
    assert session.events[-1]["data"] == {"id": "compaction-1", "pruned": 1}
    msgs = session.derive_messages()
    assert msgs[3]["content"].startswith("[elided tool result — fetch, 6000 bytes dropped")
    assert session.events[big]["data"]["message"]["content"] == "z" * 6000  # the original stays
    # an elided result is not pruned again; forced, the fold follows
    asyncio.run(c.maybe_compact(3900, []))
    assert summarizer.calls == 1
    assert [e["type"] for e in session.events].count("tool/result") == 2


def test_archive_files_are_private_and_never_overwritten(tmp_path: Path) -> None:
    arch = tmp_path / "archive"
    r = Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)], archive_dir=str(arch))
    r.agent.run_sync("go")
    [path] = list(arch.iterdir())
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    name = path.name
    assert name.endswith(f"-{r.session.id}-1.jsonl") and len(name.split("-")[0]) == 8
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [m["role"] for m in lines] == ["assistant", "tool", "assistant", "tool"]
    assert lines[1]["content"] == _out(1)
    [done] = r.of(CompactionDone)
    assert done.archive == str(path)
    summary = next(e for e in r.session.events if e["type"] == "compaction/summary")["data"]
    assert summary["archive"] == str(path)
    from foldlog.compaction import write_archive

    again = write_archive(arch, r.session.id, 1, lines)
    assert again != str(path) and path.read_text().count("\n") == 4


def test_fold_in_a_session_reloaded_from_disk_derives_identically(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with Session.open(path, system="You are a test assistant.") as session:
        r = Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)], session=session)
        r.agent.run_sync("go")
        live = session.derive_messages()
        version = session.rewrite_version
        assert "compaction/end" in r.types()
    loaded = Session.load(path)
    assert loaded.derive_messages() == live
    assert loaded.wire_messages() == session.wire_messages()
    assert loaded.rewrite_version >= 1 and version >= 1
    assert loaded.unfinished_compaction is None and unfinished_compaction(loaded) is None
    # a second compaction on the reloaded session keeps the first digest verbatim
    with Session.open(path) as again:
        c = Compactor(
            again,
            Scripted([]),
            Options(
                context_window=WINDOW, summary_provider=Scripted([summary_reply("## Goal\n- second")])
            ).compaction(),
        )
        again.add({"role": "user", "content": "more"})
        for i in range(4, 7):
            again.add({"role": "assistant", "content": "", "tool_calls": [_call(f"x{i}")]})
            again.add({"role": "tool", "tool_call_id": f"x{i}", "name": "fetch", "content": _out(i)})
        assert asyncio.run(c.compact("manual", force=True)) is not None
        digests = [again.derive_messages()[i]["content"] for i in digest_indices(again)]
        assert len(digests) == 2 and digests[0] == live[2]["content"]


def test_a_crash_between_start_and_end_is_reported_on_load(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    crash = tmp_path / "crash.jsonl"
    session = Session.open(path, system="You are a test assistant.")

    def crash_now(req: Request) -> Any:
        session.flush()  # what is on disk when the process dies mid-summary
        crash.write_bytes(path.read_bytes())
        return summary_reply()

    r = Run(
        [step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)], summaries=[crash_now], session=session
    )
    r.agent.run_sync("go")
    session.close()
    loaded = Session.load(crash)
    start = loaded.unfinished_compaction
    assert start is not None and loaded.events[start]["type"] == "compaction/start"
    info = unfinished_compaction(loaded)
    assert info is not None and info["id"] == "compaction-1" and info["trigger"] == "auto"
    # the surface is as it was before the compaction
    assert digest_indices(loaded) == []


def test_cancelled_summary_closes_the_compaction_with_an_error() -> None:
    r = Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)])
    session = r.session
    for m in ({"role": "user", "content": "go"},):
        session.add(m)
    for i in range(3):
        session.add({"role": "assistant", "content": "", "tool_calls": [_call(f"k{i}")]})
        session.add({"role": "tool", "tool_call_id": f"k{i}", "name": "fetch", "content": _out(i)})
    session.add({"role": "user", "content": "next"})
    hang = Scripted([{"content": "", "hang": True}])
    c = Compactor(session, Scripted([]), Options(context_window=WINDOW, summary_provider=hang).compaction())

    async def go() -> None:
        task = asyncio.create_task(c.compact("manual", force=True))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    end = session.events[-1]
    assert end["type"] == "compaction/end" and end["data"] == {"id": "compaction-1", "error": "cancelled"}
    assert digest_indices(session) == []


def test_without_usage_the_local_count_decides() -> None:
    session = Session(system="s")
    session.add({"role": "user", "content": "go"})
    for i in range(4):
        session.add({"role": "assistant", "content": "", "tool_calls": [_call(f"k{i}")]})
        session.add({"role": "tool", "tool_call_id": f"k{i}", "name": "fetch", "content": _out(i)})
    summarizer = Scripted([summary_reply()])
    opts = Options(context_window=WINDOW, summary_provider=summarizer, prune_min_bytes=10**9)
    c = Compactor(session, Scripted([]), opts.compaction())
    asyncio.run(c.maybe_compact(None, [{"type": "function", "function": {"name": "fetch"}}]))
    assert summarizer.calls == 1  # ~4,000 estimated tokens: past 80% of 4,000
    small = Compactor(
        Session(system="s"),
        Scripted([]),
        Options(context_window=WINDOW, summary_provider=summarizer).compaction(),
    )
    asyncio.run(small.maybe_compact(None, []))
    assert summarizer.calls == 1
    # no window: nothing at all
    none = Compactor(session, Scripted([]), Options(summary_provider=summarizer).compaction())
    asyncio.run(none.maybe_compact(10**9, []))
    assert summarizer.calls == 1


def test_manual_compaction_with_nothing_to_fold_is_a_notice() -> None:
    events: list[Any] = []
    session = Session(system="s")
    session.add({"role": "user", "content": "hi"})
    c = Compactor(session, Scripted([]), Options(context_window=WINDOW).compaction(), events.append)
    assert asyncio.run(c.compact("manual", force=True)) is None
    assert [type(e) for e in events] == [Notice] and "nothing to compact" in events[0].message
    assert len(session.events) == 2
