"""``foldlog sessions``: the sessions folder, newest first, as a tree.

A session whose header names a parent (a fork, a sub-agent's session) is listed under it,
indented; a session whose parent is not in the folder is listed at the top level.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import config_from_args, console, human_size, int_arg
from foldlog.cli.cost_view import spend_text
from foldlog.cli.exits import EXIT_ERROR, EXIT_OK
from foldlog.cli.store import list_sessions
from foldlog.stores.base import SessionInfo

if TYPE_CHECKING:
    from foldlog.cost.ledger import Spend
    from foldlog.stores.base import SessionStore
    from foldlog.stores.retention import PruneReport


def add_parser(verbs: Any) -> None:
    sessions = verbs.add_parser("sessions", help="list sessions, newest first")
    sessions.add_argument("--json", action="store_true", help="print JSON")
    sessions.add_argument("-n", "--limit", type=int_arg(0), default=20, help="how many to list (0 = all)")
    sessions.set_defaults(func=cmd_sessions)
    actions = sessions.add_subparsers(dest="sessions_action", metavar="{prune}")
    prune = actions.add_parser(
        "prune",
        help="remove sessions unused for a while, with their forks, sub-agents and media",
        description="Remove the sessions not used (appended to) for DURATION, each with its forks and "
        "sub-agent sessions. An old session that a recent fork or sub-agent session needs is kept; a "
        "session being written is never removed. See docs/retention.md.",
    )
    prune.add_argument(
        "--older-than", required=True, metavar="DURATION", type=_duration_arg, help="30d, 12h, 90m, 2w …"
    )
    prune.add_argument(
        "--keep-last", type=int_arg(0), default=0, metavar="N", help="keep the N most recent sessions anyway"
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would go; change nothing")
    prune.add_argument("--json", action="store_true", help="print the report as JSON")
    prune.add_argument(
        "--dsn", default=None, help="prune this PostgreSQL store instead of the sessions folder"
    )
    prune.set_defaults(func=cmd_prune)


def _duration_arg(text: str) -> timedelta:
    """An argparse ``type``: a retention duration; a bad one is a usage error naming the option."""
    from foldlog.stores.retention import InvalidDurationError, parse_duration

    try:
        return parse_duration(text)
    except InvalidDurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def tree(infos: list[SessionInfo]) -> list[tuple[SessionInfo, int]]:
    """The sessions in tree order with their depth: each top-level session (newest first)
    followed by its children (newest first), theirs under them, and so on."""
    ids = {i.id for i in infos}
    children: dict[str, list[SessionInfo]] = {}
    roots: list[SessionInfo] = []
    for info in infos:  # already newest first
        if info.parent is not None and info.parent in ids and info.parent != info.id:
            children.setdefault(info.parent, []).append(info)
        else:
            roots.append(info)
    out: list[tuple[SessionInfo, int]] = []
    seen: set[str] = set()

    def walk(info: SessionInfo, depth: int) -> None:
        if info.id in seen:
            return  # two files with one id, or a loop of parent links: list each once
        seen.add(info.id)
        out.append((info, depth))
        for child in children.get(info.id, []):
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    for info in infos:  # a loop of parents has no root: list what is left at the top
        walk(info, 0)
    return out


def row(info: SessionInfo, depth: int = 0, spend: Spend | None = None) -> dict[str, Any]:
    """One session of ``foldlog sessions --json`` (``cost``: what its log recorded, sub-agents
    included; ``None`` when it recorded none)."""
    return {
        "id": info.id,
        "parent": info.parent,
        "parent_kind": info.parent_kind,
        "depth": depth,
        "path": info.path,
        "size": info.size,
        "last_used": info.updated / 1000,
        "turns": info.turns,
        "preview": info.preview or "",
        "cost": spend.to_dict() if spend is not None and spend.requests else None,
    }


def _label(info: SessionInfo, depth: int) -> str:
    """The id column: children indented under their parent, with how they come from it."""
    if depth == 0:
        return info.id
    kind = f" ({info.parent_kind})" if info.parent_kind else ""
    return "  " * (depth - 1) + "└ " + info.id + kind


def spend_of(info: SessionInfo) -> Spend | None:
    """The spending of a listed session, as `log inspect` reports it (only the rows shown are
    read)."""
    if not info.path:
        return None
    from foldlog.cost.ledger import session_ledger

    try:
        return session_ledger(info.path).session
    except Exception:  # a damaged log is listed anyway (`log inspect` says what is wrong)
        return None


def _ago(updated_ms: int, now: float) -> str:
    seconds = max(now - updated_ms / 1000, 0)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return "just now"


def cmd_sessions(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    rows = tree(list_sessions(cfg.sessions_dir))
    if args.limit:
        # the limit counts top-level sessions: a session is listed with all its children
        tops = [n for n, (_, depth) in enumerate(rows) if depth == 0]
        if len(tops) > args.limit:
            rows = rows[: tops[args.limit]]
    infos = [info for info, _ in rows]
    spends = [spend_of(i) for i in infos]
    if args.json:
        listing = [row(i, d, s) for (i, d), s in zip(rows, spends, strict=True)]
        print(json.dumps({"sessions_dir": str(cfg.sessions_dir), "sessions": listing}, indent=2))
        return EXIT_OK
    out = console()
    if not infos:
        out.print(f"no sessions in {cfg.sessions_dir}")
        return EXIT_OK
    from rich.table import Table

    table = Table(title=str(cfg.sessions_dir), title_justify="left", box=None, pad_edge=False)
    # rich drops whole columns when no_wrap cells cannot fit, so the preview is cut to the room left
    labels = [_label(info, depth) for info, depth in rows]
    id_width = min(max(len(label) for label in labels), 48)
    room = max(out.width - id_width - 9 - 5 - 10 - 8 - 16, 8)
    table.add_column("id", no_wrap=True, overflow="ellipsis", max_width=id_width)
    table.add_column("last used", no_wrap=True)
    table.add_column("turns", justify="right", no_wrap=True)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    table.add_column("preview", no_wrap=True)
    now = time.time()
    for info, label, spend in zip(infos, labels, spends, strict=True):
        preview = info.preview or ""
        preview = preview if len(preview) <= room else preview[: room - 1] + "…"
        cost = spend_text(spend) if spend is not None else "-"
        table.add_row(label, _ago(info.updated, now), str(info.turns), human_size(info.size), cost, preview)
    out.print(table)
    return EXIT_OK


def cmd_prune(args: argparse.Namespace) -> int:
    """``foldlog sessions prune``: 0 done (or nothing to do), 1 the store failed."""
    from foldlog.errors import StorageError
    from foldlog.stores.retention import prune

    store: SessionStore | None = None
    where = "the PostgreSQL store" if args.dsn else str(config_from_args(args).sessions_dir)
    try:
        if args.dsn:
            from foldlog.stores.postgres import PostgresStore

            store = PostgresStore(args.dsn, max_readers=1)
        else:
            from foldlog.stores.file import FileStore

            store = FileStore(where)
        report = prune(
            store, args.older_than, args.keep_last, dry_run=args.dry_run, progress=_progress_printer()
        )
    except StorageError as exc:
        print(f"foldlog sessions prune: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()
    if args.json:
        print(json.dumps({"store": where, **report.to_dict()}, indent=2))
    else:
        _print_report(report, where)
    return EXIT_OK


def _progress_printer() -> Any:
    """Progress on stderr for long prunes: a line about once a second after the first second."""
    started = time.monotonic()
    shown = [started]

    def show(done: int, total: int, session_id: str) -> None:
        now = time.monotonic()
        if (now - shown[0] >= 1.0 and now - started >= 1.0) or (done == total and now - started >= 1.0):
            shown[0] = now
            print(f"pruning: {done}/{total} sessions handled (last: {session_id})", file=sys.stderr)

    return show


def _print_report(report: PruneReport, where: str) -> None:
    verb = "would remove" if report.dry_run else "removed"
    cutoff = time.strftime("%Y-%m-%d %H:%M", time.localtime(report.cutoff / 1000))
    print(
        f"{where}: {verb} {len(report.removed)} session(s) unused since {cutoff} "
        f"({human_size(report.freed_bytes)})"
    )
    for info in report.removed:
        kind = f" ({info.parent_kind} of {info.parent})" if info.parent else ""
        print(f"  - {info.id}{kind}")
    if report.kept:
        print(f"kept {len(report.kept)} old session(s):")
        for kept in report.kept:
            print(f"  = {kept.id}: {kept.reason}")
    if report.media_removed:
        print(f"removed {report.media_removed} media blob(s) no session references any more")
