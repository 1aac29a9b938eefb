"""``foldlog sessions prune``: retention from the command line (the file store of the home)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from foldlog import Session
from tests.cli.cli_testlib import run_cli


def make_sessions(home: Path, ages_days: dict[str, float]) -> Path:
    folder = home / "sessions"
    for sid, days in ages_days.items():
        s = Session.open(folder / f"{sid}.jsonl", system="sys")
        s.add({"role": "user", "content": f"hello from {sid}"})
        s.close()
        when = time.time() - days * 86400
        os.utime(folder / f"{sid}.jsonl", (when, when))
    return folder


def test_dry_run_lists_and_keeps_then_prune_removes(tmp_path: Path) -> None:
    folder = make_sessions(tmp_path, {"ancient": 100, "old": 40, "fresh": 1})
    dry = run_cli("sessions", "prune", "--older-than", "30d", "--dry-run", "--json", home=tmp_path)
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] is True
    assert sorted(r["id"] for r in report["removed"]) == ["ancient", "old"]
    assert sorted(p.stem for p in folder.glob("*.jsonl")) == ["ancient", "fresh", "old"]

    kept = run_cli("sessions", "prune", "--older-than", "30d", "--keep-last", "2", home=tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert "removed 1 session(s)" in kept.stdout and "- ancient" in kept.stdout
    assert "= old: one of the --keep-last most recent" in kept.stdout
    assert sorted(p.name for p in folder.iterdir()) == ["fresh.jsonl", "fresh.lock", "old.jsonl", "old.lock"]

    listing = json.loads(run_cli("sessions", "--json", home=tmp_path).stdout)
    assert [s["id"] for s in listing["sessions"]] == ["fresh", "old"]


def test_a_bad_duration_is_a_usage_error_naming_the_option(tmp_path: Path) -> None:
    make_sessions(tmp_path, {"old": 40})
    for bad in ("30", "thirty days", "0h"):
        out = run_cli("sessions", "prune", "--older-than", bad, home=tmp_path)
        assert out.returncode == 2
        assert "--older-than" in out.stderr and "invalid duration" in out.stderr
        assert "Traceback" not in out.stderr
    assert (tmp_path / "sessions" / "old.jsonl").exists()


def test_an_unreachable_database_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    out = run_cli(
        "sessions",
        "prune",
        "--older-than",
        "1d",
        "--dsn",
        "postgresql://nobody@127.0.0.1:1/none",
        home=tmp_path,
    )
    assert out.returncode == 1
    assert out.stderr.startswith("foldlog sessions prune: cannot connect to PostgreSQL")
