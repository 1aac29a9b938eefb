"""``foldlog`` command line: argument parsing and dispatch.

Each verb lives in its own module, which adds its parser (``add_parser(verbs)``, as
``foldlog.cli.db`` does) and sets ``func``, the handler that returns the exit code. The verb
modules import their heavy dependencies only when the verb runs, so ``foldlog --help`` and
``foldlog log inspect`` stay quick. Exit codes (``foldlog.cli.exits``): 0 done, 1 error, 2 usage
error, 3 max steps reached, 130 cancelled (Ctrl-C), 143 terminated (SIGTERM: the turn is cancelled as
by Ctrl-C).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from foldlog.cli.exits import EXIT_CANCELLED, EXIT_ERROR, EXIT_MAX_STEPS, EXIT_OK, UsageError

#: the modules of the verbs, in the order ``foldlog --help`` lists them
VERBS = (
    "foldlog.cli.log_cmds",
    "foldlog.cli.sessions_cmd",
    "foldlog.cli.run_cmd",
    "foldlog.cli.chat_cmd",
    "foldlog.cli.approve_cmd",
    "foldlog.cli.db",
    "foldlog.cli.compact_cmd",
    "foldlog.cli.batch_cmd",
)


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
    for module in VERBS:
        importlib.import_module(module).add_parser(verbs)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)  # exits 2 on a usage error
    from foldlog.errors import FoldlogError, MaxStepsExceeded, RunCancelled

    try:
        code: int = args.func(args)
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
    except (FoldlogError, OSError) as exc:
        print(f"foldlog: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return code


if __name__ == "__main__":
    sys.exit(main())
