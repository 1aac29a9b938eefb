"""``foldlog compact`` and ``foldlog.toml``: a bad number is a usage error naming the argument or
the key, never a traceback (issue 26)."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldlog.log.session import Session
from tests.cli.cli_testlib import run_cli


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    with Session.open(path) as s:
        for i in range(3):
            s.add({"role": "user", "content": f"question {i}"})
            s.add({"role": "assistant", "content": f"answer {i}"})
    return path


@pytest.mark.parametrize("value", ["-5", "0", "lots"])
def test_compact_refuses_a_bad_context_window(tmp_path: Path, value: str) -> None:
    log = _log(tmp_path)
    stored = log.read_bytes()
    proc = run_cli("compact", str(log), "--mechanical", "--context-window", value, home=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "--context-window" in proc.stderr and "Traceback" not in proc.stderr
    assert log.read_bytes() == stored


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("context_window = -5", "context_window"),
        ('context_window = "big"', "context_window"),
        ("max_steps = 0", "max_steps"),
        ("token_budget = -1", "token_budget"),
        ("cost_limit = nan", "cost_limit"),
        ("context_window = true", "context_window"),
    ],
)
def test_a_bad_number_in_foldlog_toml_names_the_key(tmp_path: Path, line: str, key: str) -> None:
    log = _log(tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    (project / "foldlog.toml").write_text(line + "\n", encoding="utf-8")
    proc = run_cli("compact", str(log), "--mechanical", "--dry-run", home=tmp_path, cwd=project)
    assert proc.returncode != 0
    assert key in proc.stderr and "foldlog.toml" in proc.stderr
    assert "Traceback" not in proc.stderr
