"""``foldlog log erase SESSION --seq N [--seq M …] --reason TEXT``: erase the content of events.

The session is opened for writing (its one-writer lock), the events' data become tombstones, a
``log/erasure`` event records which, why and when, and the file is rewritten atomically
(docs/log-format.md, "Erasure"). Forks in the same folder that hold their own copy of erased
events are listed: erasing a session does not reach into them.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from foldlog.cli.common import config_from_args, int_arg, session_path
from foldlog.cli.exits import EXIT_OK


def add_parser(log_verbs: Any) -> None:
    erase = log_verbs.add_parser(
        "erase", help="remove the content of events (tombstones in their place, an erasure record)"
    )
    erase.add_argument("session", metavar="PATH|ID")
    erase.add_argument(
        "--seq",
        dest="seqs",
        type=int_arg(0),
        action="append",
        required=True,
        metavar="N",
        help="an event to erase (repeat for more)",
    )
    erase.add_argument("--reason", required=True, help="why (recorded in the erasure event)")
    erase.add_argument("--json", action="store_true", help="print what was done as JSON")
    erase.set_defaults(func=cmd_erase)


def _headers(folder: Path, skip: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """``(session id, header)`` of every other session file in ``folder``."""
    for path in sorted(folder.glob("*.jsonl")):
        if path.resolve() == skip.resolve():
            continue
        try:
            with open(path, "rb") as f:
                header = json.loads(f.readline(1 << 16))
        except (OSError, ValueError):
            continue
        if isinstance(header, dict) and header.get("type") == "session":
            yield str(header.get("id") or path.stem), header


def cmd_erase(args: argparse.Namespace) -> int:
    from foldlog.log.erasure import forks_holding
    from foldlog.log.session import Session

    path = session_path(args.session, config_from_args(args))
    session = Session.open(path)
    try:
        done = session.erase(args.seqs, args.reason)
    finally:
        session.close()
    copies = forks_holding(session.id, done.seqs, _headers(path.parent, path))
    if args.json:
        report = {
            "id": session.id,
            "path": str(path),
            "erased": list(done.seqs),
            "erasure_seq": done.seq,
            "reason": done.reason,
            "at": done.at,
            "media_removed": done.media_removed,
            "forks_holding": [{"id": fork, "seqs": seqs} for fork, seqs in copies],
        }
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return EXIT_OK
    shown = ", ".join(f"#{s}" for s in done.seqs)
    print(f"{path}: erased event(s) {shown}; recorded as event #{done.seq} ({done.reason})")
    if done.media_removed:
        print(f"  removed {done.media_removed} media file(s) no other event references")
    for fork, seqs in copies:
        held = " ".join(f"--seq {s}" for s in seqs)
        print(f"  fork {fork} holds its own copy of them: foldlog log erase {fork} {held} --reason …")
    return EXIT_OK
