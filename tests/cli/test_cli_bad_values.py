"""Bad numbers on the command line: every numeric argument of every verb refuses a negative,
zero (where zero means nothing) or non-numeric value at once, as argparse's usage error naming
the argument (exit 2), never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldlog.cli.main import build_parser
from tests.cli.cli_testlib import run_cli

#: (argv, the argument the error names, the bad value) for each numeric argument of the CLI
#: (``compact --context-window`` and ``log tail`` are checked with their verbs' own tests)
CASES: list[tuple[list[str], str, str]] = [
    (["sessions", "-n", "-1"], "-n/--limit", "-1"),
    (["sessions", "--limit", "ten"], "-n/--limit", "ten"),
    (["run", "--max-steps", "0", "hi"], "--max-steps", "0"),
    (["run", "--max-steps", "2.5", "hi"], "--max-steps", "2.5"),
    (["chat", "--context-window", "-5"], "--context-window", "-5"),
    (["run", "--context-window", "0", "hi"], "--context-window", "0"),
    (["run", "--cost-limit", "-1", "hi"], "--cost-limit", "-1"),
    (["run", "--cost-limit", "nan", "hi"], "--cost-limit", "nan"),
    (["chat", "--cost-limit", "inf"], "--cost-limit", "inf"),
    (["run", "--token-budget", "-3", "hi"], "--token-budget", "-3"),
    (["log", "fork", "s", "--at", "-1"], "--at", "-1"),
    (["log", "import", "--from", "codex", "x.jsonl", "--index", "-1"], "--index", "-1"),
    (["log", "trace", "s", "--timeout", "0"], "--timeout", "0"),
    (["log", "trace", "s", "--timeout", "soon"], "--timeout", "soon"),
    (["batch", "stats", "s", "-o", "t.csv", "--workers", "0"], "--workers", "0"),
    (["batch", "stats", "s", "-o", "t.csv", "--shard-size", "-2"], "--shard-size", "-2"),
]


@pytest.mark.parametrize(("argv", "name", "value"), CASES, ids=[" ".join(c[0]) for c in CASES])
def test_a_bad_number_is_a_usage_error_naming_the_argument(
    argv: list[str], name: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {name}: " in err and value in err, err
    assert "Traceback" not in err


def test_sessions_with_a_negative_limit_exits_2_without_a_traceback(tmp_path: Path) -> None:
    out = run_cli("sessions", "-n", "-1", home=tmp_path)
    assert out.returncode == 2, out.stderr
    assert "argument -n/--limit: must be >= 0, got -1" in out.stderr
    assert "Traceback" not in out.stderr
    ok = run_cli("sessions", "-n", "0", home=tmp_path)  # 0 = all: still accepted
    assert ok.returncode == 0, ok.stderr
