"""``foldlog log fork SESSION [--at SEQ] [-o FILE]``: a new session that branches off another.

The fork's file refers to its parent's log (it holds only its header and, later, its own
events); ``foldlog sessions`` lists it under its parent.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from foldlog.cli.common import config_from_args, int_arg, session_path
from foldlog.cli.exits import EXIT_OK


def add_parser(log_verbs: Any) -> None:
    fork = log_verbs.add_parser("fork", help="start a new session from a session's history up to an event")
    fork.add_argument("session", metavar="PATH|ID")
    fork.add_argument(
        "--at", type=int_arg(0), metavar="SEQ", help="the last event the fork keeps (default: the last one)"
    )
    fork.add_argument(
        "-o", "--output", metavar="FILE", help="the fork's log file (default: a new id beside it)"
    )
    fork.add_argument("--json", action="store_true", help="print what was made as JSON")
    fork.set_defaults(func=cmd_fork)


def cmd_fork(args: argparse.Namespace) -> int:
    from foldlog.log.forks import fork_file

    parent = session_path(args.session, config_from_args(args))
    fork = fork_file(parent, args.at, Path(args.output) if args.output else None)
    try:
        link = dict(fork.parent or {})
        info = {"id": fork.id, "path": str(fork.path), "parent": link.get("id"), "at_seq": link.get("atSeq")}
        events = len(fork.events)
    finally:
        fork.close()
    if args.json:
        print(json.dumps({**info, "events": events}, indent=2))
    else:
        print(f"{info['path']}: fork of {info['parent']} at event #{info['at_seq']} ({events} events)")
    return EXIT_OK
