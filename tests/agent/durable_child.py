"""The child process of tests/agent/test_durable_kill.py: runs the durable scenario's turn on a
stored session and kills itself (SIGKILL: no cleanup, no flush, no lock release but the kernel's)
right after the Nth event this process appends.

Usage: ``python -m tests.agent.durable_child STORE SESSION COUNTER N``: ``STORE`` ``file:FOLDER``
or ``postgres:DSN``, ``N`` 0 to run to the end.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from foldlog import Session
from tests.agent.durable_scenario import make_agent

SYSTEM = "You keep a note."


def open_session(store: str, session_id: str) -> Session:
    kind, _, where = store.partition(":")
    if kind == "postgres":
        from foldlog.stores.postgres import PostgresStore

        return Session.open(PostgresStore(where), session_id, system=SYSTEM)
    if kind == "file":
        return Session.open(where, session_id, system=SYSTEM)
    raise SystemExit(f"STORE must be file:FOLDER or postgres:DSN, not {store!r}")


def main(store: str, session_id: str, counter: str, kill_at: int) -> None:
    session = open_session(store, session_id)
    seen = 0

    def count(event: Mapping[str, Any]) -> None:
        nonlocal seen
        seen += 1
        if seen == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    session.stream.subscribe(count)
    agent = make_agent(session, Path(counter))
    agent.run_sync("Note one, then two.")
    session.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
