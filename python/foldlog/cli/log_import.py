"""``foldlog log import``: a foreign transcript (and its sub-agents and branches) as foldlog logs.

Each converted conversation is one log, written by the import driver both this command and
``batch import`` use (`foldlog.interchange.import_logs`: children beside their parent, the
header's ``imported`` meta, every log read back). This module decides where the logs go.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from foldlog.cli.exits import EXIT_OK, UsageError
from foldlog.errors import SessionNotFoundError


def cmd_import(args: argparse.Namespace) -> int:
    from foldlog.cli.common import config_from_args
    from foldlog.cli.store import safe_id
    from foldlog.interchange import convert
    from foldlog.interchange.import_logs import (
        PlannedLog,
        check_targets,
        plan_logs,
        shared_target,
        write_logs,
    )

    cfg = config_from_args(args)
    src = Path(args.src)
    if not src.is_file():
        raise SessionNotFoundError(f"{src}: no such file")
    conversations = convert(args.source_format, src, branches=args.branches)
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
    plan: list[PlannedLog] = []
    for index, conv in enumerate(conversations):
        if folder is None:
            target = Path(args.output)
        else:
            target = folder / f"{safe_id(conv.id or f'{src.stem}-{index}')}.jsonl"
        plan.extend(plan_logs(conv, target, safe_id(conv.id or target.stem)))
    if shared_target(plan) is not None:
        raise UsageError("two transcripts would be written to the same file")
    check_targets(plan, force=args.force)
    written = write_logs(plan)
    if args.json:
        print(json.dumps(written if len(written) > 1 else written[0], indent=2))
        return EXIT_OK
    for item in written:
        print(_line(item))
    return EXIT_OK


def _line(item: dict[str, Any]) -> str:
    from foldlog.cli.log_cmds import _repair_note as repair_note

    roles = ", ".join(f"{n} {r}" for r, n in sorted(item["messages"].items()))
    parent = item["parent"]
    link = ""
    if parent is not None:
        kind = parent.get("kind")
        if kind == "subagent":
            link = f"  (sub-agent of {parent['id']}, answers {parent.get('callId', 'no known call')})"
        elif kind == "fork":
            link = f"  (fork of {parent['id']} after event {parent.get('atSeq')})"
    return (
        f"{item['path']}: {item['events']} events, {item['turns']} turns, {roles}, "
        f"{item['tool_calls']} tool calls, {item['tool_results']} tool results, "
        f"{item['compactions']} compactions"
        + link
        + (repair_note(item["repair"]) if item["needs_repair"] else "")
        + "".join(f"\n  warning: {w}" for w in item["warnings"])
        + "".join(f"\n  left out: {w}" for w in item["left_out"])
    )
