"""``foldlog log show|inspect|repair|import|export``."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import config_from_args, console, session_path, surface_tokens
from foldlog.cli.exits import EXIT_OK, UsageError
from foldlog.cli.render import print_events, print_messages

if TYPE_CHECKING:
    from foldlog.log.session import Session


def add_parser(verbs: Any) -> None:
    """``log show|inspect|repair|import|export``."""
    from foldlog.interchange import FORMATS
    from foldlog.interchange.exporters import EXPORTERS

    log = verbs.add_parser("log", help="show, inspect, repair, import and export session logs")
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
        "--index", type=int, help="only the N-th transcript of a multi-transcript file (0-based)"
    )
    imp.add_argument("--force", action="store_true", help="overwrite existing output files")
    imp.add_argument("--json", action="store_true", help="print what was written as JSON")
    imp.set_defaults(func=cmd_import)
    exp = log_verbs.add_parser("export", help="write a log's derived messages in another format")
    exp.add_argument("--to", dest="target_format", required=True, choices=tuple(EXPORTERS))
    exp.add_argument("src", metavar="PATH|ID")
    exp.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    exp.add_argument(
        "--wire",
        action="store_true",
        help="apply the strict send normalizer (exactly what a request would carry)",
    )
    exp.set_defaults(func=cmd_export)


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
    core's statistics (`Session.stats`), with the session's identity, tokens and health."""
    repair = dict(getattr(session, "repair_report", {}) or {})
    stats = session.stats()
    tokens, tokenizer = surface_tokens(session.derive_messages(), model)
    report: dict[str, Any] = {
        "id": getattr(session, "id", None),
        "path": str(path) if path else getattr(session, "path", None),
        "events": stats["events"],
        "turns": stats["turns"],
        "steps": stats["steps"],
        "messages": stats["messages"],
        "surface_messages": stats["surface_messages"],
        "surface_tokens": tokens,
        "tokenizer": tokenizer,
        "tool_calls": stats["tool_calls"],
        "tool_results": stats["tool_results"],
        "compactions": stats["compactions"],
        "unfinished_compactions": stats["unfinished_compactions"],
        "needs_repair": bool(getattr(session, "normalized_dirty", False)),
        "usage": stats["usage"],
    }
    if report["needs_repair"]:
        report["repair"] = {k: v for k, v in repair.items() if v}
    if getattr(session, "torn_tail", None):
        report["torn_tail"] = dict(session.torn_tail)
    if path is not None and path.exists():
        report["bytes"] = path.stat().st_size
    return report


def cmd_inspect(args: argparse.Namespace) -> int:
    path = session_path(args.path, config_from_args(args))
    report = inspect_session(_load(path), path, model=args.model)
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
        return EXIT_OK
    out = console()
    from rich.markup import escape

    for key, value in report.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
        out.print(f"[bold]{key:>22}[/]  {escape(str(value))}")
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
    from foldlog.cli.store import safe_id
    from foldlog.interchange import convert
    from foldlog.interchange.writer import write_conversation
    from foldlog.log.session import Session
    from foldlog.stores.file import private_folder

    cfg = config_from_args(args)
    src = Path(args.src)
    if not src.is_file():
        raise FileNotFoundError(f"{src}: no such file")
    conversations = convert(args.source_format, src)
    if args.index is not None:
        if not 0 <= args.index < len(conversations):
            raise UsageError(f"--index {args.index}: {src} holds {len(conversations)} transcript(s)")
        conversations = [conversations[args.index]]
    if not conversations:
        raise UsageError(f"{src}: no transcript found")

    # one transcript -> a file (or into the sessions folder); several -> a folder
    if args.output is None:
        folder: Path | None = cfg.sessions_dir
    elif len(conversations) > 1 or Path(args.output).is_dir() or args.output.endswith(("/", "\\")):
        folder = Path(args.output)
    else:
        folder = None
    targets: list[Path] = []
    for index, conv in enumerate(conversations):
        if folder is None:
            targets.append(Path(args.output))
        else:
            stem = safe_id(conv.id or f"{src.stem}-{index}")
            targets.append(folder / f"{stem}.jsonl")
    if len(set(targets)) != len(targets):
        raise UsageError("two transcripts would be written to the same file")
    existing = [t for t in targets if t.exists()]
    if existing and not args.force:
        raise FileExistsError(f"{existing[0]} exists (use --force to overwrite)")

    written = []
    for conv, target in zip(conversations, targets, strict=True):
        private_folder(target.parent)
        session = Session(id=safe_id(conv.id or target.stem), meta={"imported": conv.meta})
        write_conversation(conv, session)
        if target.exists():
            target.unlink()  # --force: save must not append to the old file
        session.save(target)
        # read it back: proves the file loads, and says whether the source left calls unanswered
        check = Session.load(target)
        written.append(
            {
                "path": str(target),
                "id": session.id,
                "events": len(conv.events),
                **conv.counts.as_dict(),
                "needs_repair": check.normalized_dirty,
                "repair": {k: v for k, v in check.repair_report.items() if v and k != "events_added"},
                "warnings": list(conv.warnings),
            }
        )
    if args.json:
        print(json.dumps(written if len(written) > 1 else written[0], indent=2))
    else:
        for item in written:
            roles = ", ".join(f"{n} {r}" for r, n in sorted(item["messages"].items()))
            print(
                f"{item['path']}: {item['events']} events, {item['turns']} turns, {roles}, "
                f"{item['tool_calls']} tool calls, {item['tool_results']} tool results, "
                f"{item['compactions']} compactions"
                + (_repair_note(item["repair"]) if item["needs_repair"] else "")
                + "".join(f"\n  warning: {w}" for w in item["warnings"])
            )
    return EXIT_OK


def _repair_note(repair: Mapping[str, Any]) -> str:
    what = ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in repair.items())
    return f"\n  loading it repairs the source's gaps ({what}); `foldlog log repair` appends the fixes"


# --- export --------------------------------------------------------------------------------


def cmd_export(args: argparse.Namespace) -> int:
    from foldlog.interchange.exporters import export

    path = session_path(args.src, config_from_args(args))
    session = _load(path)
    data = export(args.target_format, session, wire=args.wire)
    if args.output:
        Path(args.output).write_bytes(data)
        count = len(session.wire_messages() if args.wire else session.derive_messages())
        print(f"{args.output}: {count} messages", file=sys.stderr)
    else:
        sys.stdout.write(data.decode())
    return EXIT_OK
