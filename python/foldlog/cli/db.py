"""``foldlog db …``: manage the PostgreSQL session store's schema.

Wire it into the main parser with ``add_parser(verbs)`` (``verbs`` = the top-level
``add_subparsers()`` result); the chosen action runs as ``args.func(args)`` and returns the exit
code. Standalone: ``python -m foldlog.cli.db db init --dsn …``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from foldlog.cli.exits import EXIT_ERROR, EXIT_OK, EXIT_USAGE

#: environment variables read (in this order) when ``--dsn`` is not given
DSN_ENV_VARS = ("FOLDLOG_DATABASE_URL", "DATABASE_URL")


def add_parser(verbs: Any) -> argparse.ArgumentParser:
    """Add ``db`` (actions ``init`` and ``status``) to a top-level sub-parser collection."""
    db: argparse.ArgumentParser = verbs.add_parser("db", help="manage the PostgreSQL session store")
    actions = db.add_subparsers(dest="db_action", metavar="{init,status}", required=True)
    init = actions.add_parser("init", help="create or migrate the foldlog schema (idempotent)")
    status = actions.add_parser("status", help="print the schema version of the database")
    for p in (init, status):
        p.add_argument(
            "--dsn",
            default=None,
            help=f"PostgreSQL connection string (default: ${DSN_ENV_VARS[0]}, then ${DSN_ENV_VARS[1]})",
        )
    init.set_defaults(func=run_init)
    status.set_defaults(func=run_status)
    return db


def _dsn(args: argparse.Namespace) -> str | None:
    if args.dsn:
        return str(args.dsn)
    for name in DSN_ENV_VARS:
        if os.environ.get(name):
            return os.environ[name]
    print(f"foldlog db: no database given: pass --dsn or set {DSN_ENV_VARS[0]}", file=sys.stderr)
    return None


def _on_database(args: argparse.Namespace, action: str, body: Callable[[str], int]) -> int:
    """Run ``body(dsn)`` (which reports and returns the exit code); 2 when no DSN is given, 1 when
    the database fails."""
    from foldlog.errors import StorageError

    dsn = _dsn(args)
    if dsn is None:
        return EXIT_USAGE
    try:
        return body(dsn)
    except StorageError as exc:
        print(f"foldlog db {action}: {exc}", file=sys.stderr)
        return EXIT_ERROR


def run_init(args: argparse.Namespace) -> int:
    """``foldlog db init``: 0 done, 1 database error, 2 no DSN."""
    from foldlog.stores.postgres import SCHEMA_VERSION, init_db

    def init(dsn: str) -> int:
        applied = init_db(dsn)
        if applied:
            print(f"applied {', '.join(applied)}: schema version {SCHEMA_VERSION}")
        else:
            print(f"up to date: schema version {SCHEMA_VERSION}")
        return EXIT_OK

    return _on_database(args, "init", init)


def run_status(args: argparse.Namespace) -> int:
    """``foldlog db status``: 0 up to date, 1 not initialised / other version / error, 2 no DSN."""
    from foldlog.stores.postgres import SCHEMA_VERSION, schema_version

    def status(dsn: str) -> int:
        found = schema_version(dsn)
        if found == 0:
            print("not initialised: run `foldlog db init`")
            return EXIT_ERROR
        state = "up to date" if found == SCHEMA_VERSION else f"this foldlog expects {SCHEMA_VERSION}"
        print(f"schema version {found} ({state})")
        return EXIT_OK if found == SCHEMA_VERSION else EXIT_ERROR

    return _on_database(args, "status", status)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="foldlog")
    add_parser(parser.add_subparsers(dest="verb", required=True))
    args = parser.parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
