"""``foldlog approve SESSION [CALL_ID] [--deny REASON]``: answer a call a paused turn waits for
(docs/durable-runs.md), from a shell; without ``CALL_ID``, list the waiting calls.

The answer is appended to the session's log through `Session.approve` / `Session.deny`, so this
verb opens the session for writing and respects its one-writer lock: while the process that
paused (a host, a chat) still holds the session, the answer is refused naming that holder.
``foldlog run --resume SESSION`` then continues the turn.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import config_from_args, session_path
from foldlog.cli.exits import EXIT_ERROR, EXIT_OK

if TYPE_CHECKING:
    from foldlog.log.session import Session


def add_parser(verbs: Any) -> None:
    p = verbs.add_parser("approve", help="approve (or --deny) a call a paused turn waits for")
    p.add_argument("session", metavar="SESSION", help="the session (a log path or an id)")
    p.add_argument("call_id", metavar="CALL_ID", nargs="?", help="the call to answer (none: list them)")
    p.add_argument("--deny", metavar="REASON", help="deny the call, telling the model why")
    p.add_argument("--dsn", help="the session is in this PostgreSQL store")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_approve)


def _open(args: argparse.Namespace, write: bool) -> Session:
    from foldlog.log.session import Session

    if args.dsn:
        from foldlog.stores.postgres import PostgresStore

        store = PostgresStore(args.dsn)
        if write:
            return Session.open(store, args.session)
        return Session.from_bytes(store.read_log(args.session), source=args.session)
    path = session_path(args.session, config_from_args(args))
    return Session.open(path) if write else Session.load(path)


def cmd_approve(args: argparse.Namespace) -> int:
    from foldlog.log.unfinished import unfinished_turn

    if args.call_id is None:
        if args.deny is not None:
            print("foldlog approve: --deny needs the CALL_ID to deny")
            return EXIT_ERROR
        plan = unfinished_turn(_open(args, write=False))
        waiting = plan.waiting if plan is not None and plan.reason == "approval" else []
        if args.json:
            print(
                json.dumps([{**c.as_pending(), "question": c.question} for c in waiting], ensure_ascii=False)
            )
        elif not waiting:
            print("no call is waiting for approval")
        for c in waiting if not args.json else []:
            question = f"  ({c.question})" if c.question else ""
            print(f"{c.call_id}  {c.name} {c.arguments}{question}")
        return EXIT_OK
    with _open(args, write=True) as session:
        if args.deny is not None:
            session.deny(args.call_id, args.deny)
        else:
            session.approve(args.call_id)
    verb = "denied" if args.deny is not None else "approved"
    print(f"{verb} {args.call_id}; continue the turn with: foldlog run --resume {args.session}")
    return EXIT_OK
