"""`Agent.resume` (docs/durable-runs.md): a turn cut off by a crash is continued from what was
stored — a call with a stored result never runs again, a cut one runs again only when its tool is
read_only or idempotent (or `Options.rerun_interrupted`), else it gets an error result — and the
loop goes on to the next step. The crash is taken where it would leave the log: the bytes on disk
at an event boundary (what a SIGKILL leaves; tests/agent/test_durable_kill.py kills real
processes), opened again (the load repair closes the turn) in a fresh session."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from foldlog import NoUnfinishedTurnError, Options, RunCancelled, Session, tool
from foldlog.agent.resume import NOT_RERUN
from foldlog.log.unfinished import repair_placeholder, unfinished_turn
from foldlog.providers.scripted import Scripted
from tests.agent.agent_helpers import of_type
from tests.agent.durable_scenario import ANSWER, make_agent, side_effects, tools

SID = "durable"
Cut = Callable[[Mapping[str, Any]], bool]


def cut_at(tmp_path: Path, when: Cut) -> Path:
    """Run the scenario to its end, keeping a copy of the stored log as it was on disk right
    after the first event ``when`` picks was appended (before anything after it was stored):
    the folder of the copy."""
    live, cut = tmp_path / "live", tmp_path / "cut"
    cut.mkdir()
    session = Session.open(live, SID, system="You keep a note.")
    taken = False

    def snapshot(event: Mapping[str, Any]) -> None:
        nonlocal taken
        if not taken and when(event):
            taken = True
            shutil.copyfile(live / f"{SID}.jsonl", cut / f"{SID}.jsonl")

    session.stream.subscribe(snapshot)
    assert make_agent(session, tmp_path / "live-note.txt").run_sync("Note one, then two.") == ANSWER
    session.close()
    assert taken
    return cut


def result_of(call_id: str) -> Cut:
    return lambda e: e["type"] == "tool/result" and e["data"]["message"]["toolCallId"] == call_id


def step_end(step: int) -> Cut:
    return lambda e: e["type"] == "step/end" and e["data"]["step"] == step


def results(session: Session) -> dict[str, list[Any]]:
    """The results the model sees now, by call id."""
    seen: dict[str, list[Any]] = {}
    for m in session.wire_messages():
        if m["role"] == "tool":
            seen.setdefault(m["tool_call_id"], []).append(m["content"])
    return seen


def assert_finished(folder: Path) -> None:
    """The turn ended ``completed``, and loading the log repairs nothing (it equals its repair)."""
    path = folder / f"{SID}.jsonl"
    stored = path.read_bytes()
    loaded = Session.load(path)
    assert not loaded.normalized_dirty and loaded.to_bytes() == stored
    ends = [e["data"]["reason"]["kind"] for e in loaded.events if e["type"] == "turn/end"]
    assert ends[-1] == "completed"
    assert unfinished_turn(loaded) is None


def test_a_cut_side_effect_is_not_run_again_and_the_turn_goes_on(tmp_path: Path) -> None:
    # stored: both calls (the write-ahead), no result: the process died while append_line ran
    folder = cut_at(tmp_path, result_of("append-1"))
    counter = tmp_path / "note.txt"
    with Session.open(folder, SID) as session:
        plan = unfinished_turn(session)
        assert plan is not None and plan.reason == "interrupted"
        assert [(c.call_id, c.state) for c in plan.calls] == [
            ("read-1", "interrupted"),
            ("append-1", "interrupted"),
        ]
        agent = make_agent(session, counter)
        assert agent.resume_sync() == ANSWER
        seen = results(session)
    # the read-only call ran again; the side effect did not: its result says why
    assert seen["read-1"] == ["(empty)"]
    assert seen["append-1"] == [NOT_RERUN.format(name="append_line")]
    assert seen["append-2"] == ["appended two"]
    assert side_effects(counter) == ["two"]
    assert_finished(folder)


def test_options_may_run_every_cut_call_again(tmp_path: Path) -> None:
    folder = cut_at(tmp_path, result_of("append-1"))
    counter = tmp_path / "note.txt"
    with Session.open(folder, SID) as session:
        agent = make_agent(session, counter, Options(rerun_interrupted=True, release_when_idle=False))
        agent.resume_sync()
        assert results(session)["append-1"] == ["appended one"]
    assert side_effects(counter) == ["one", "two"]
    assert_finished(folder)


def test_an_idempotent_tool_runs_again(tmp_path: Path) -> None:
    folder = cut_at(tmp_path, result_of("append-1"))
    counter = tmp_path / "note.txt"

    @tool(idempotent=True)
    def append_line(text: str) -> str:
        """Set the line (idempotent here)."""
        counter.write_text(text + "\n", encoding="utf-8")
        return f"set {text}"

    with Session.open(folder, SID) as session:
        agent = make_agent(session, counter)
        agent.registry.unregister("append_line")
        agent.registry.register(append_line)
        agent.resume_sync()
        assert results(session)["append-1"] == ["set one"]
    assert_finished(folder)


def test_a_call_with_a_stored_result_never_runs_again(tmp_path: Path) -> None:
    # the side effect's result is stored as soon as it is final: a cut after it keeps it
    folder = cut_at(tmp_path, step_end(1))
    counter = tmp_path / "note.txt"
    with Session.open(folder, SID) as session:
        plan = unfinished_turn(session)
        assert plan is not None and plan.calls == [] and plan.steps == 1
        assert make_agent(session, counter).resume_sync() == ANSWER
        assert results(session)["append-1"] == ["appended one"]
    assert side_effects(counter) == ["two"]
    assert_finished(folder)


def test_a_turn_cut_after_its_final_answer_only_ends(tmp_path: Path) -> None:
    live = tmp_path / "live"
    session = Session.open(live, SID, system="You keep a note.")
    make_agent(session, tmp_path / "n.txt").run_sync("Note one, then two.")
    session.close()
    path = live / f"{SID}.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    assert json.loads(lines[-1])["type"] == "turn/end"
    path.write_bytes(b"".join(lines[:-2]))  # the answer stored; its step/end and turn/end not
    with Session.open(live, SID) as session:
        agent = make_agent(session, tmp_path / "n2.txt")
        assert agent.resume_sync() == ANSWER
        assert agent.provider.calls == 0  # type: ignore[attr-defined]
    assert_finished(live)


def test_a_session_without_an_unfinished_turn_says_so(tmp_path: Path) -> None:
    with Session.open(tmp_path, SID, system="s") as session:
        agent = make_agent(session, tmp_path / "n.txt")
        with pytest.raises(NoUnfinishedTurnError, match="no turns"):
            agent.resume_sync()
        agent.run_sync("go")
        with pytest.raises(NoUnfinishedTurnError, match=r"last turn \(1\) ended"):
            agent.resume_sync()


def test_a_resumed_turn_cut_again_resumes_again(tmp_path: Path) -> None:
    folder = cut_at(tmp_path, result_of("append-1"))
    counter = tmp_path / "note.txt"
    again = tmp_path / "again"
    again.mkdir()
    with Session.open(folder, SID) as session:
        taken = False

        def snapshot(event: Mapping[str, Any]) -> None:
            nonlocal taken
            if (
                not taken
                and event["type"] == "tool/result"
                and event["data"]["message"]["toolCallId"] == "append-2"
            ):
                taken = True
                shutil.copyfile(folder / f"{SID}.jsonl", again / f"{SID}.jsonl")

        session.stream.subscribe(snapshot)
        make_agent(session, counter).resume_sync()
    assert taken
    with Session.open(again, SID) as session:
        plan = unfinished_turn(session)
        assert plan is not None and [(c.call_id, c.state) for c in plan.calls] == [
            ("append-2", "interrupted")
        ]
        make_agent(session, tmp_path / "note-2.txt").resume_sync()
        seen = results(session)
    assert seen["append-1"] == [NOT_RERUN.format(name="append_line")]
    assert seen["append-2"] == [NOT_RERUN.format(name="append_line")]
    assert side_effects(tmp_path / "note-2.txt") == []
    assert_finished(again)


def test_the_repair_placeholder_is_the_core_s() -> None:
    assert repair_placeholder().startswith("[no result:")


def test_every_tool_in_the_scenario_declares_what_it_does(tmp_path: Path) -> None:
    by_name = {t.name: t for t in tools(tmp_path / "n.txt")}
    assert by_name["read_note"].may_run_again and not by_name["append_line"].may_run_again


def test_a_cancelled_turn_goes_on_from_its_next_request(tmp_path: Path) -> None:
    # SIGTERM in the CLI (a deploy stopping the host) or Agent.cancel(): the turn ends `aborted`
    # with what it had done logged; resume goes on with the next request
    counter = tmp_path / "note.txt"
    with Session.open(tmp_path, SID, system="s") as session:
        agent = make_agent(session, counter)
        real = agent.provider.stream
        hung: list[bool] = []

        def hang_on_step_two(request: Any) -> Any:
            if sum(1 for m in request.messages if m["role"] == "tool") == 2:
                agent.provider.stream = real  # type: ignore[method-assign]
                hung.append(True)
                return Scripted([{"content": "thinking", "hang": True}]).stream(request)
            return real(request)

        agent.provider.stream = hang_on_step_two  # type: ignore[method-assign]

        async def run_and_cancel() -> None:
            task = asyncio.ensure_future(agent.run("Note one, then two."))
            while not hung:  # step 2's request streams "thinking", then hangs
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            agent.cancel()
            with pytest.raises(RunCancelled):
                await task

        asyncio.run(run_and_cancel())
        assert [e["data"]["reason"]["kind"] for e in of_type(session, "turn/end")] == ["aborted"]
        assert agent.resume_sync() == ANSWER
    assert side_effects(counter) == ["one", "two"]
    assert_finished(tmp_path)
