"""``foldlog log show|inspect|repair|import`` (export, fork, tail and trace: their own modules)."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import config_from_args, console, int_arg, session_path
from foldlog.cli.exits import EXIT_OK
from foldlog.cli.render import print_events, print_messages

if TYPE_CHECKING:
    from foldlog.log.session import Session


def add_parser(verbs: Any) -> None:
    """``log show|inspect|repair|import|export|fork|tail|trace``."""
    from foldlog.interchange import BRANCHES, FORMATS

    log = verbs.add_parser(
        "log", help="show, inspect, repair, import, export, fork, erase, tail and trace session logs"
    )
    log_verbs = log.add_subparsers(dest="log_verb", metavar="ACTION")
    log_verbs.required = True
    show = log_verbs.add_parser("show", help="print the conversation a log derives")
    show.add_argument("path", metavar="PATH|ID")
    show.add_argument("--full", action="store_true", help="do not shorten long messages")
    show.add_argument("--events", action="store_true", help="list the raw events instead")
    show.set_defaults(func=cmd_show)
    inspect = log_verbs.add_parser("inspect", help="counts and health of a log")
    inspect.add_argument("path", metavar="PATH|ID")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument(
        "--model", help="count the surface's tokens with this model's tokenizer (default: deepseek-v4-flash)"
    )
    inspect.set_defaults(func=cmd_inspect)
    repair = log_verbs.add_parser("repair", help="append the events that make a damaged log usable")
    repair.add_argument("path", metavar="PATH|ID")
    repair.set_defaults(func=cmd_repair)
    imp = log_verbs.add_parser("import", help="convert a foreign transcript into a foldlog log")
    imp.add_argument("--from", dest="source_format", required=True, choices=tuple(FORMATS))
    imp.add_argument("src", metavar="SRC")
    imp.add_argument(
        "-o",
        "--output",
        metavar="DST",
        help="log file to write (a folder when SRC holds several transcripts); default: the sessions folder",
    )
    imp.add_argument(
        "--index", type=int_arg(0), help="only the N-th transcript of a multi-transcript file (0-based)"
    )
    imp.add_argument(
        "--branches",
        choices=BRANCHES,
        default="current",
        help="abandoned branches (checkpoint rewinds): left out and reported (current, the default) "
        "or written as fork sessions (all); sub-agents are always written as child sessions",
    )
    imp.add_argument("--force", action="store_true", help="overwrite existing output files")
    imp.add_argument("--json", action="store_true", help="print what was written as JSON")
    imp.set_defaults(func=cmd_import)
    from foldlog.cli import log_erase, log_export, log_fork, log_tail, log_view
    from foldlog.cli.trace_cmd import add_trace_parser

    log_erase.add_parser(log_verbs)
    log_export.add_parser(log_verbs)
    log_fork.add_parser(log_verbs)
    log_tail.add_parser(log_verbs)
    log_view.add_parser(log_verbs)
    add_trace_parser(log_verbs)


def _load(path: Path) -> Session:
    from foldlog.log.session import Session

    return Session.load(path)


# --- show ----------------------------------------------------------------------------------


def cmd_show(args: argparse.Namespace) -> int:
    path = session_path(args.path, config_from_args(args))
    session = _load(path)
    out = console()
    if args.events:
        print_events(session.events, out, full=args.full)
    else:
        print_messages(session.derive_messages(), out, full=args.full)
    _report_load(session, path)
    return EXIT_OK


def _report_load(session: Session, path: Path) -> None:
    """Tell the user (on stderr) what loading had to fix in memory."""
    notes = []
    torn = session.torn_tail
    if torn:
        notes.append(f"a torn last line (line {torn.get('line')}, {torn.get('bytes')} bytes) was cut off")
    if session.unfinished_compaction is not None:
        notes.append(f"the compaction started at event #{session.unfinished_compaction} never finished")
    if session.normalized_dirty:
        notes.append(f"the log needs repair (`foldlog log repair {path}` appends the fixes)")
    for note in notes:
        print(f"foldlog: note: {note}", file=sys.stderr)


# --- inspect -------------------------------------------------------------------------------


def inspect_session(session: Any, path: Path | None = None, *, model: str | None = None) -> dict[str, Any]:
    """Counts of the log as stored (load-time repair events excluded) and of its surface: the
    core's statistics (`foldlog.log.stats.log_stats`), with the session's identity, tokens and
    health."""
    from foldlog.log.stats import log_stats

    repair = dict(getattr(session, "repair_report", {}) or {})
    stats = log_stats(session)
    tokens, tokenizer, exact = _surface_tokens(session, model)
    report: dict[str, Any] = {
        "id": getattr(session, "id", None),
        "path": str(path) if path else getattr(session, "path", None),
        "events": stats["events"],
        "turns": stats["turns"],
        "steps": stats["steps"],
        "messages": stats["messages"],
        "surface_messages": stats["surface_messages"],
        "surface_tokens": tokens,
        "tokens_exact": exact,
        "tokenizer": tokenizer,
        "tokens_model": session.counting_model(model),
        "tool_calls": stats["tool_calls"],
        "tool_results": stats["tool_results"],
        "compactions": stats["compactions"],
        "unfinished_compactions": stats["unfinished_compactions"],
        "needs_repair": bool(getattr(session, "normalized_dirty", False)),
        "usage": stats["usage"],
        "cost": _cost(session),
    }
    if report["needs_repair"]:
        report["repair"] = {k: v for k, v in repair.items() if v}
    if getattr(session, "torn_tail", None):
        report["torn_tail"] = dict(session.torn_tail)
    if path is not None and path.exists():
        report["bytes"] = path.stat().st_size
    return report


def _surface_tokens(session: Any, model: str | None) -> tuple[int, str, bool]:
    """The surface's prompt tokens by the session's rule (`Session.counting_model`: ``--model``,
    else the model the log names, else the estimate for an imported session), the tokenizer's
    name, and whether the count is exact."""
    from foldlog.errors import FoldlogError
    from foldlog.log.tokens import Tokenizer

    try:
        count = session.token_count(model)
        return int(count), session.tokenizer(model).name, bool(count.exact)
    except FoldlogError:  # the model's tokenizer data is missing: the estimate, labelled as such
        estimate = Tokenizer.estimate()
        return int(estimate.count_request(session.derive_messages())), estimate.name, False


def _cost(session: Any) -> dict[str, Any]:
    from foldlog.cli.cost_view import cost_report, ledger_of

    return cost_report(ledger_of(session))


def cmd_inspect(args: argparse.Namespace) -> int:
    path = session_path(args.path, config_from_args(args))
    session = _load(path)
    report = inspect_session(session, path, model=args.model)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return EXIT_OK
    out = console()
    from rich.markup import escape

    del report["cost"]  # shown below, line by line
    for key, value in report.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
        out.print(f"[bold]{key:>22}[/]  {escape(str(value))}")
    from foldlog.cli.cost_view import cost_lines, ledger_of

    lines = cost_lines(ledger_of(session))
    out.print(f"[bold]{'cost':>22}[/]  {escape(lines[0].removeprefix('session  '))}")
    for line in lines[1:]:
        out.print(f"{'':>24}{escape(line.strip())}")
    return EXIT_OK


# --- repair --------------------------------------------------------------------------------


def cmd_repair(args: argparse.Namespace) -> int:
    """Open the log for writing: the session appends its load-repair events (and cuts a torn tail)."""
    from foldlog.log.session import Session

    path = session_path(args.path, config_from_args(args))
    session = Session.open(path)
    try:
        added = int(session.repair_report.get("events_added", 0))
        new_events = list(session.events[len(session.events) - added :]) if added else []
        torn = session.torn_tail
        session.flush()
    finally:
        session.close()
    if torn:
        print(f"{path}: cut a torn last line (line {torn.get('line')}, {torn.get('bytes')} bytes)")
    if not new_events:
        if not torn:
            print(f"{path}: nothing to repair ({len(session.events)} events)")
        return EXIT_OK
    kinds = Counter(str(ev.get("type")) for ev in new_events)
    detail = ", ".join(f"{n} {t}" for t, n in kinds.items())
    print(f"{path}: appended {len(new_events)} repair event(s): {detail}")
    return EXIT_OK


# --- import --------------------------------------------------------------------------------


def cmd_import(args: argparse.Namespace) -> int:
    from foldlog.cli.log_import import cmd_import as run

    return run(args)


def _repair_note(repair: Mapping[str, Any]) -> str:
    what = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in repair.items())
    return f"\n  loading it repairs the source's gaps ({what}); `foldlog log repair` appends the fixes"
