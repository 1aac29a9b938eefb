"""The command line's entry points: every verb registers itself, and a usage error exits 2
however the CLI is started (``python -m foldlog`` or ``python -m foldlog.cli.main``)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from foldlog.cli.exits import EXIT_USAGE
from foldlog.cli.main import VERBS, build_parser


@pytest.mark.parametrize("entry", ["foldlog", "foldlog.cli.main"])
def test_an_empty_prompt_is_a_usage_error_not_a_traceback(entry: str) -> None:
    out = subprocess.run(
        [sys.executable, "-m", entry, "run", " "], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == EXIT_USAGE, out.stderr
    assert "the prompt is empty" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("argv", "module"),
    [
        (["log", "show", "x"], "foldlog.cli.log_cmds"),
        (["log", "import", "--from", "codex", "x"], "foldlog.cli.log_cmds"),
        (["sessions"], "foldlog.cli.sessions_cmd"),
        (["run", "hi"], "foldlog.cli.run_cmd"),
        (["chat"], "foldlog.cli.chat_cmd"),
        (["db", "status"], "foldlog.cli.db"),
        (["compact", "x"], "foldlog.cli.compact_cmd"),
        (["batch", "stats", "x", "-o", "out.csv"], "foldlog.cli.batch_cmd"),
    ],
)
def test_each_verb_is_handled_by_the_module_that_registered_it(argv: list[str], module: str) -> None:
    assert module in VERBS
    args = build_parser().parse_args(argv)
    assert args.func.__module__ == module
