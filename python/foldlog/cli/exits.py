"""The CLI's exit codes and its usage error: a leaf module every verb imports (and ``main``,
however it is started: ``python -m foldlog.cli.main`` runs main as ``__main__``, and a class
defined there would not be the one the verbs raise)."""

from __future__ import annotations

from foldlog.errors import FoldlogError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_MAX_STEPS = 3
EXIT_APPROVAL = 4  # the turn paused for a person's approval (`foldlog approve`, then `run --resume`)
EXIT_CANCELLED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM: the turn was cancelled as by Ctrl-C, then foldlog stopped


class UsageError(FoldlogError, ValueError):
    """Bad arguments found after parsing: the CLI prints the usage line and exits 2."""


__all__ = [
    "EXIT_APPROVAL",
    "EXIT_CANCELLED",
    "EXIT_ERROR",
    "EXIT_MAX_STEPS",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "UsageError",
]
