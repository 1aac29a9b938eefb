"""Approvals (docs/durable-runs.md): a call that needs a person's yes pauses its turn — the
``approval/request`` event, the turn ended ``approval``, `ApprovalRequired` naming the calls —
the answer is recorded from any process that opens the session (`Session.approve` / `deny`,
``foldlog approve``), and `Agent.resume` runs each approved call exactly once and gives each
denied one an error result with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldlog import Agent, ApprovalRequired, NoUnfinishedTurnError, Options, Session, SessionLockedError, tool
from foldlog.agent.resume import DENIED
from foldlog.errors import ApprovalStateError
from foldlog.hooks import allow, ask
from foldlog.log.unfinished import unfinished_turn
from foldlog.providers.base import Request
from foldlog.providers.scripted import Scripted
from foldlog.tools.registry import Tool
from tests.agent.agent_helpers import call, of_type, reply

SID = "pay"


class Bank:
    """Records every payment made: the side effect that must happen once at most."""

    def __init__(self) -> None:
        self.paid: list[int] = []

    def tool(self, needs: Any = True) -> Tool:
        @tool(needs_approval=needs)
        def pay(amount: int) -> str:
            """Pay ``amount``."""
            self.paid.append(amount)
            return f"paid {amount}"

        return pay


def provider(*calls: dict[str, Any]) -> Scripted:
    """Asks for ``calls`` until the history holds a tool result, then answers (so a resumed
    process, whose provider starts afresh, gets the answer)."""

    def next_reply(request: Request) -> dict[str, Any]:
        if any(m["role"] == "tool" for m in request.messages):
            return reply("all done")
        return reply("", *calls)

    return Scripted([next_reply] * 6)


def agent(session: Session, bank: Bank, *calls: dict[str, Any], needs: Any = True) -> Agent:
    @tool(read_only=True)
    def balance() -> str:
        """The balance."""
        return "100"

    return Agent(provider(*calls), [bank.tool(needs), balance], session, Options(release_when_idle=False))


def pause(tmp_path: Path, bank: Bank, *calls: dict[str, Any], needs: Any = True) -> ApprovalRequired:
    """Run until the turn pauses, in a session stored in ``tmp_path`` (closed after: its lock freed)."""
    with Session.open(tmp_path, SID, system="s") as session:
        with pytest.raises(ApprovalRequired) as raised:
            agent(session, bank, *calls, needs=needs).run_sync("pay the bills")
    return raised.value


def test_a_call_that_needs_approval_pauses_the_turn(tmp_path: Path) -> None:
    bank = Bank()
    err = pause(tmp_path, bank, call("pay", {"amount": 5}, "p1"), call("balance", {}, "b1"))
    assert err.calls == [{"id": "p1", "name": "pay", "arguments": '{"amount": 5}'}]
    assert bank.paid == []
    session = Session.load(tmp_path / f"{SID}.jsonl")
    assert not session.normalized_dirty  # a paused log needs no repair
    [request] = of_type(session, "approval/request")
    assert request["data"]["calls"] == [{"callId": "p1", "name": "pay", "arguments": '{"amount": 5}'}]
    end = of_type(session, "turn/end")[-1]["data"]["reason"]
    assert end == {"kind": "approval", "calls": ["p1"]}
    # the call that needs no approval ran; the waiting one stands with a result saying so
    by_id = {
        r["data"]["message"]["toolCallId"]: r["data"]["message"] for r in of_type(session, "tool/result")
    }
    assert by_id["b1"]["content"] == "100"
    assert by_id["p1"]["isError"] and "waiting for a person's approval" in by_id["p1"]["content"]


def test_approved_from_another_session_the_call_runs_exactly_once(tmp_path: Path) -> None:
    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 5}, "p1"))
    with Session.open(tmp_path, SID) as other:  # another process would do the same
        other.approve("p1")
        with pytest.raises(ApprovalStateError, match="already answered"):
            other.approve("p1")
    with Session.open(tmp_path, SID) as session:
        a = agent(session, bank, call("pay", {"amount": 5}, "p1"))
        assert a.resume_sync() == "all done"
        assert bank.paid == [5]
        results = [m for m in session.wire_messages() if m["role"] == "tool"]
        assert [(m["tool_call_id"], m["content"]) for m in results] == [("p1", "paid 5")]
        with pytest.raises(NoUnfinishedTurnError):
            a.resume_sync()
    assert bank.paid == [5]
    loaded = Session.load(tmp_path / f"{SID}.jsonl")
    assert not loaded.normalized_dirty
    assert of_type(loaded, "turn/start")[-1]["data"] == {"turn": 1, "resumed": "approval"}


def test_a_denied_call_gets_the_reason_and_never_runs(tmp_path: Path) -> None:
    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 500}, "p1"))
    with Session.open(tmp_path, SID) as session:
        session.deny("p1", "too much")
        a = agent(session, bank)
        a.resume_sync()
        [result] = [m for m in session.wire_messages() if m["role"] == "tool"]
    assert result["content"] == DENIED.format(name="pay", reason="too much")
    assert bank.paid == []


def test_resuming_while_calls_still_wait_raises_again_and_writes_nothing(tmp_path: Path) -> None:
    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 1}, "p1"), call("pay", {"amount": 2}, "p2"))
    with Session.open(tmp_path, SID) as session:
        session.approve("p1")
        before = len(session)
        with pytest.raises(ApprovalRequired) as raised:
            agent(session, bank).resume_sync()
        assert [c["id"] for c in raised.value.calls] == ["p2"]
        assert len(session) == before and bank.paid == []


def test_answers_are_refused_for_calls_that_do_not_wait(tmp_path: Path) -> None:
    with Session.open(tmp_path, SID, system="s") as session:
        with pytest.raises(ApprovalStateError, match="not paused"):
            session.approve("x")
    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 1}, "p1"))
    with Session.open(tmp_path, SID) as session:
        with pytest.raises(ApprovalStateError, match="not a call of the paused turn"):
            session.deny("nope", "no")


def test_the_answer_respects_the_one_writer_lock(tmp_path: Path) -> None:
    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 1}, "p1"))
    with Session.open(tmp_path, SID):  # the host still holds the session
        with pytest.raises(SessionLockedError):
            Session.open(tmp_path, SID)


def test_a_callable_decides_per_call(tmp_path: Path) -> None:
    bank = Bank()
    err = pause(
        tmp_path,
        bank,
        call("pay", {"amount": 5}, "small"),
        call("pay", {"amount": 500}, "big"),
        needs=lambda args: args["amount"] > 100,
    )
    assert [c["id"] for c in err.calls] == ["big"] and bank.paid == [5]


def test_a_pre_execute_hook_that_asks_pauses_when_no_approver_is_set(tmp_path: Path) -> None:
    bank = Bank()
    with Session.open(tmp_path, SID, system="s") as session:
        a = agent(session, bank, call("pay", {"amount": 7}, "p1"), needs=False)

        @a.hooks.tool_pre_execute
        def confirm(ctx: Any, next: Any) -> Any:
            return ask(f"pay {ctx.arguments['amount']}?") if ctx.call.name == "pay" else allow()

        with pytest.raises(ApprovalRequired):
            a.run_sync("go")
        [request] = of_type(session, "approval/request")
        assert request["data"]["calls"][0]["question"] == "pay 7?"
        session.approve("p1")
        a.resume_sync()  # the hook asks again; the approval answers it
    assert bank.paid == [7]


def test_an_approver_answers_at_once_without_pausing(session: Session) -> None:
    bank = Bank()
    a = agent(session, bank, call("pay", {"amount": 3}, "p1"))
    asked: list[str] = []

    def approver(ctx: Any, question: str) -> bool:
        asked.append(ctx.call.id)
        return True

    a.hooks.approver = approver
    assert a.run_sync("go") == "all done"
    assert bank.paid == [3] and asked == ["p1"] and not of_type(session, "approval/request")


def test_an_approved_call_cut_while_it_ran_is_not_run_again(tmp_path: Path) -> None:
    # the approved call's tool/call is written again (and stored) before it runs: a process that
    # dies while it runs leaves that behind, and the next resume does not pay twice
    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 9}, "p1"))
    with Session.open(tmp_path, SID) as session:
        session.approve("p1")
    path = tmp_path / f"{SID}.jsonl"
    with Session.open(tmp_path, SID) as session:
        a = agent(session, bank)
        snapshot: list[bytes] = []

        def keep(event: Any) -> None:
            if event["type"] == "tool/result" and not snapshot:
                snapshot.append(path.read_bytes())  # on disk: the call written again, no result

        session.stream.subscribe(keep)
        a.resume_sync()
    assert bank.paid == [9]
    path.write_bytes(snapshot[0])
    with Session.open(tmp_path, SID) as session:
        plan = unfinished_turn(session)
        assert plan is not None and [(c.call_id, c.state) for c in plan.calls] == [("p1", "interrupted")]
        a = agent(session, bank)
        a.resume_sync()
        [result] = [m for m in session.wire_messages() if m["role"] == "tool"]
    assert bank.paid == [9] and "interrupted and not re-run" in result["content"]


def test_the_cli_lists_and_answers_waiting_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from foldlog.cli.main import main

    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 4}, "p1"), call("pay", {"amount": 8}, "p2"))
    path = str(tmp_path / f"{SID}.jsonl")
    assert main(["approve", path, "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [c["id"] for c in listed] == ["p1", "p2"]
    assert main(["approve", path, "p1"]) == 0
    assert main(["approve", path, "p2", "--deny", "not today"]) == 0
    assert "run --resume" in capsys.readouterr().out
    assert main(["approve", path, "p2"]) == 1  # already answered: an error, named
    with Session.open(path) as session:
        a = agent(session, bank)
        a.resume_sync()
    assert bank.paid == [4]


def test_a_trace_shows_the_wait_as_a_pause_not_an_error(tmp_path: Path) -> None:
    from foldlog.telemetry import export_session
    from tests.telemetry.otel_helpers import memory_provider, spans

    bank = Bank()
    pause(tmp_path, bank, call("pay", {"amount": 2}, "p1"))
    with Session.open(tmp_path, SID) as session:
        session.approve("p1")
        agent(session, bank).resume_sync()
    provider, exporter = memory_provider()
    export_session(tmp_path / f"{SID}.jsonl", provider)
    turns = [s for s in spans(exporter) if s.name == "invoke_agent"]
    # the paused part and the resumed part: two spans of turn 1, the gap between them the wait
    assert [(s.attributes or {}).get("foldlog.turn.end_reason") for s in turns] == ["approval", "completed"]
    assert all(s.status.is_ok for s in turns)
