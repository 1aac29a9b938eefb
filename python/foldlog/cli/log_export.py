"""``foldlog log export --to openai|atif|claude-code|codex``: a session in another tool's format.

The sub-agent sessions of the session (files in its folder whose header names it as their
parent, ``kind: "subagent"``) go with it where the format carries them: Claude Code as
``<output stem>/subagents/agent-<id>.jsonl`` beside the output file, ATIF embedded. What the
format cannot carry (an audio block in Codex, the system prompt in Claude Code) is a note on
stderr naming the message and the block; ``--strict`` makes it an error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from foldlog.cli.common import config_from_args, session_path
from foldlog.cli.exits import EXIT_OK, UsageError


def add_parser(log_verbs: Any) -> None:
    from foldlog.interchange.exports import EXPORT_FORMATS

    exp = log_verbs.add_parser("export", help="write a log in another tool's format")
    exp.add_argument("--to", dest="target_format", required=True, choices=EXPORT_FORMATS)
    exp.add_argument("src", metavar="PATH|ID")
    exp.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write here instead of stdout (needed when sub-agent files go with it)",
    )
    exp.add_argument(
        "--wire",
        action="store_true",
        help="openai: apply the strict send normalizer (exactly what a request would carry)",
    )
    exp.add_argument("--no-subagents", action="store_true", help="leave the sub-agent sessions out")
    exp.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1, nothing written) when the format cannot carry everything, instead of a note",
    )
    exp.set_defaults(func=cmd_export)


def cmd_export(args: argparse.Namespace) -> int:
    from foldlog.interchange.exports import export, subagent_children
    from foldlog.log.session import Session

    path = session_path(args.src, config_from_args(args))
    session = Session.load(path)
    if args.wire and args.target_format != "openai":
        raise UsageError("--wire applies to --to openai only")
    children = [] if args.no_subagents else subagent_children(session.id, path.parent)
    result = export(session, args.target_format, children=children, wire=args.wire, strict=args.strict)
    for warning in result.warnings:
        print(f"foldlog: note: {warning}", file=sys.stderr)
    if args.output:
        written = result.write(Path(args.output))
        extra = f" (+ {len(written) - 1} sub-agent file(s))" if len(written) > 1 else ""
        print(f"{args.output}: {args.target_format}{extra}", file=sys.stderr)
        return EXIT_OK
    if result.files:
        names = ", ".join(result.files)
        raise UsageError(f"the export has sub-agent files ({names}): give -o FILE, or --no-subagents")
    sys.stdout.write(result.text)
    return EXIT_OK
