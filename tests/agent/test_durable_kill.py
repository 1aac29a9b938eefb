"""Death at every point (docs/durable-runs.md, docs/reliability.md "Durable runs"): a child process
runs the durable scenario's 3-step turn (a side-effecting tool, a read-only tool, the scripted
provider) on a stored session and is killed with SIGKILL right after its Nth appended event, for
every N in turn; then this process — another one — opens the session (the dead writer's lock is
gone with it), resumes the turn and checks, every time: each side effect happened at most once,
the turn ended ``completed`` with the scenario's answer, and the log is valid and equals what
loading it repairs. The same on PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest

from foldlog import NoUnfinishedTurnError, Session, SessionLockedError
from foldlog.log.unfinished import unfinished_turn
from tests.agent.durable_scenario import ANSWER, LINES, make_agent, side_effects
from tests.stores.conftest import pg_dsn, pg_server  # noqa: F401  (the PostgreSQL fixtures)

REPO = Path(__file__).resolve().parents[2]
SYSTEM = "You keep a note."


def child(store: str, sid: str, counter: Path, kill_at: int) -> int:
    """Run the scenario in a child process killed after its ``kill_at``-th event; its exit status.
    ``store``: ``file:FOLDER`` or ``postgres:DSN`` (tests/agent/durable_child.py)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), str(REPO)) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "tests.agent.durable_child", store, sid, str(counter), str(kill_at)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode in (0, -signal.SIGKILL), proc.stderr
    return proc.returncode


def open_when_free(open_session: Callable[[], Session]) -> Session:
    """Open the session once the dead writer's lock is gone (a PostgreSQL server notices a killed
    client's connection a moment after the kernel closes it)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return open_session()
        except SessionLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def resume_and_check(open_session: Callable[[], Session], counter: Path, stored: Callable[[], bytes]) -> str:
    """Resume what the dead child left and check the guarantees; how the turn had been left."""
    session = open_when_free(open_session)
    try:
        plan = unfinished_turn(session)
        left = "none" if plan is None else plan.reason
        agent = make_agent(session, counter)
        if plan is None:
            # the child died before its turn was stored, or after it ended: nothing to continue
            with pytest.raises(NoUnfinishedTurnError):
                agent.resume_sync()
            if session.last_turn == 0:
                assert side_effects(counter) == []
                agent.run_sync("Note one, then two.")
        else:
            assert agent.resume_sync() == ANSWER
    finally:
        session.close()
    effects = side_effects(counter)
    for line in LINES:
        assert effects.count(line) <= 1, f"side effect {line!r} happened {effects.count(line)} times"
    data = stored()
    log = Session.from_bytes(data)
    assert not log.normalized_dirty, "the finished log still needed a repair"
    assert log.to_bytes() == data, "loading the log changed it"
    ends = [e["data"]["reason"]["kind"] for e in log.events if e["type"] == "turn/end"]
    assert ends[-1] == "completed"
    calls = [m for m in log.wire_messages() if m["role"] == "tool"]
    assert len({m["tool_call_id"] for m in calls}) == len(calls) == 3  # one result per call
    return left


def kill_at_every_event(
    store: str,
    tmp_path: Path,
    opener: Callable[[str], Session],
    stored: Callable[[str], bytes],
) -> list[str]:
    """Kill a child after its 1st, 2nd, … event until one finishes the turn; each time resume and
    check (one session per kill point). How each kill left the turn."""
    left = []
    n = 1
    while True:
        sid = f"killed-{n}"
        counter = tmp_path / f"note-{n}.txt"
        status = child(store, sid, counter, n)
        left.append(resume_and_check(partial(opener, sid), counter, partial(stored, sid)))
        if status == 0:  # the turn finished before its Nth event: every boundary was a kill point
            return left
        n += 1


def test_sigkill_at_every_event_boundary_then_resume_file_store(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    left = kill_at_every_event(
        f"file:{folder}",
        tmp_path,
        lambda sid: Session.open(folder, sid, system=SYSTEM),
        lambda sid: (folder / f"{sid}.jsonl").read_bytes(),
    )
    assert len(left) > 15  # every event of the turn was a kill point
    assert left.count("interrupted") > 10  # most of them cut the turn


def test_sigkill_at_every_event_boundary_then_resume_postgres(tmp_path: Path, pg_dsn: str) -> None:  # noqa: F811
    from foldlog.stores.postgres import PostgresStore

    store = PostgresStore(pg_dsn)
    left = kill_at_every_event(
        f"postgres:{pg_dsn}", tmp_path, lambda sid: Session.open(store, sid, system=SYSTEM), store.read_log
    )
    assert len(left) > 15 and left.count("interrupted") > 10
