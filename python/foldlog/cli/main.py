"""``foldlog`` command line: argument parsing and dispatch.

Each verb lives in its own module, imported only when that verb runs, so ``foldlog --help``
and ``foldlog log inspect`` stay quick. Exit codes: 0 done, 1 error, 2 usage error,
3 max steps reached, 130 cancelled.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_MAX_STEPS = 3
EXIT_CANCELLED = 130

PROVIDERS = ("local", "deepseek", "openai", "openai-compatible")
IMPORT_FORMATS = ("claude-code", "codex", "openai", "dsh", "openhands", "swe-agent")


class UsageError(Exception):
    """Bad arguments found after parsing (exit code 2)."""


def _agent_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--provider", choices=PROVIDERS, help="model provider (default from foldlog.toml, else local)"
    )
    p.add_argument("--model", help="model name")
    p.add_argument("--base-url", help="API base URL (openai-compatible servers)")
    p.add_argument("--session", metavar="PATH|ID", help="continue this session (a log path or an id)")
    p.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the most recent session",
    )
    p.add_argument("--max-steps", type=int, help="step budget per turn")
    p.add_argument("--context-window", type=int, help="context window in tokens (overrides the provider's)")
    p.add_argument("--workspace", metavar="DIR", help="folder the file tools are rooted in (default: .)")
    p.add_argument("--bash", action="store_true", help="enable the bash tool (off by default)")
    p.add_argument(
        "--force-tool",
        metavar="NAME",
        help="the first step of each turn must call this tool (small local models need the nudge)",
    )
    p.add_argument("--show-reasoning", action="store_true", help="print the model's reasoning")


def build_parser() -> argparse.ArgumentParser:
    from foldlog import __version__

    parser = argparse.ArgumentParser(
        prog="foldlog", description="Host LLM agents on an append-only session log."
    )
    parser.add_argument("--version", action="version", version=f"foldlog {__version__}")
    parser.add_argument(
        "--home", metavar="DIR", help="foldlog home (sessions in DIR/sessions); or FOLDLOG_HOME"
    )
    verbs = parser.add_subparsers(dest="verb", metavar="COMMAND")
    verbs.required = True

    log = verbs.add_parser("log", help="show, inspect, repair, import and export session logs")
    log_verbs = log.add_subparsers(dest="log_verb", metavar="ACTION")
    log_verbs.required = True
    show = log_verbs.add_parser("show", help="print the conversation a log derives")
    show.add_argument("path", metavar="PATH|ID")
    show.add_argument("--full", action="store_true", help="do not shorten long messages")
    show.add_argument("--events", action="store_true", help="list the raw events instead")
    inspect = log_verbs.add_parser("inspect", help="counts and health of a log")
    inspect.add_argument("path", metavar="PATH|ID")
    inspect.add_argument("--json", action="store_true", help="print JSON")
    inspect.add_argument(
        "--model", help="count the surface's tokens with this model's tokenizer (default: deepseek-v4-flash)"
    )
    repair = log_verbs.add_parser("repair", help="append the events that make a damaged log usable")
    repair.add_argument("path", metavar="PATH|ID")
    imp = log_verbs.add_parser("import", help="convert a foreign transcript into a foldlog log")
    imp.add_argument("--from", dest="source_format", required=True, choices=IMPORT_FORMATS)
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
    exp = log_verbs.add_parser("export", help="write a log's derived messages in another format")
    exp.add_argument("--to", dest="target_format", required=True, choices=("openai",))
    exp.add_argument("src", metavar="PATH|ID")
    exp.add_argument("-o", "--output", metavar="FILE", help="write here instead of stdout")
    exp.add_argument(
        "--wire",
        action="store_true",
        help="apply the strict send normalizer (exactly what a request would carry)",
    )

    sessions = verbs.add_parser("sessions", help="list sessions, newest first")
    sessions.add_argument("--json", action="store_true", help="print JSON")
    sessions.add_argument("-n", "--limit", type=int, default=20, help="how many to list (0 = all)")

    run = verbs.add_parser("run", help="run one prompt headless and print the answer")
    run.add_argument("prompt", help="the prompt ('-' reads it from stdin)")
    _agent_options(run)
    run.add_argument("--json", action="store_true", help="print one JSON object per event, then a result")

    chat = verbs.add_parser("chat", help="interactive chat with slash commands (/help)")
    _agent_options(chat)

    from foldlog.cli import db  # the PostgreSQL store's schema verbs (its own module)

    db.add_parser(verbs)

    compact = verbs.add_parser("compact", help="fold a session's history into a summary now")
    compact.add_argument("path", metavar="PATH|ID")
    compact.add_argument("--focus", metavar="TEXT", help="what the summary should keep")
    compact.add_argument("--provider", choices=PROVIDERS)
    compact.add_argument("--model")
    compact.add_argument("--base-url")
    compact.add_argument("--context-window", type=int)
    compact.add_argument(
        "--mechanical", action="store_true", help="no summary call: fold with a plain notice"
    )
    compact.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    return parser


def _dispatch(args: argparse.Namespace) -> int:
    verb = args.verb
    if verb == "log":
        from foldlog.cli import log_cmds

        handler = {
            "show": log_cmds.cmd_show,
            "inspect": log_cmds.cmd_inspect,
            "repair": log_cmds.cmd_repair,
            "import": log_cmds.cmd_import,
            "export": log_cmds.cmd_export,
        }[args.log_verb]
        return handler(args)
    if verb == "sessions":
        from foldlog.cli.sessions_cmd import cmd_sessions

        return cmd_sessions(args)
    if verb == "run":
        from foldlog.cli.run_cmd import cmd_run

        return cmd_run(args)
    if verb == "chat":
        from foldlog.cli.chat_cmd import cmd_chat

        return cmd_chat(args)
    if verb == "db":
        code: int = args.func(args)
        return code
    if verb == "compact":
        from foldlog.cli.compact_cmd import cmd_compact

        return cmd_compact(args)
    raise UsageError(f"unknown command {verb!r}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error
    from foldlog.cli.config import ConfigError
    from foldlog.errors import FoldlogError, MaxStepsExceeded, RunCancelled

    try:
        return _dispatch(args)
    except UsageError as exc:
        parser.error(str(exc))  # exits 2
    except MaxStepsExceeded as exc:
        print(f"foldlog: stopped: {exc}", file=sys.stderr)
        return EXIT_MAX_STEPS
    except (RunCancelled, KeyboardInterrupt):
        print("foldlog: cancelled", file=sys.stderr)
        return EXIT_CANCELLED
    except BrokenPipeError:  # `foldlog log show x | head`
        return EXIT_OK
    except (FoldlogError, ConfigError, OSError) as exc:
        print(f"foldlog: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
