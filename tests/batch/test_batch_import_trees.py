"""``batch import`` writes what ``log import`` writes (issue 26, item 2): one import driver, so a
session's sub-agent runs and (with ``--branches all``) its forks are child logs beside it, with
the same ids, parent links and events."""

from __future__ import annotations

import json
from pathlib import Path

from foldlog import Session
from foldlog.batch import run_batch
from tests.batch.conftest import corpus_root
from tests.cli.cli_testlib import run_cli
from tests.interchange.test_interchange_trees import rewind_session

WITH_AGENTS = "claude-code-spotter/fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl"  # two Task runs


def _same_logs(cli_paths: list[Path], batch_paths: list[Path]) -> None:
    assert [p.name for p in cli_paths] == [p.name for p in batch_paths]
    for a_path, b_path in zip(cli_paths, batch_paths, strict=True):
        a, b = Session.load(a_path), Session.load(b_path)
        assert (a.id, a.parent) == (b.id, b.parent)
        assert [(e["type"], e["data"], e.get("surfaceOp")) for e in a.events] == [
            (e["type"], e["data"], e.get("surfaceOp")) for e in b.events
        ]


def _log_import(src: Path, out: Path, home: Path, *extra: str) -> list[Path]:
    proc = run_cli(
        "log", "import", "--from", "claude-code", str(src), "-o", f"{out}/", "--json", *extra, home=home
    )
    assert proc.returncode == 0, proc.stderr
    written = json.loads(proc.stdout)
    return [Path(w["path"]) for w in (written if isinstance(written, list) else [written])]


def test_batch_import_writes_the_sub_agent_logs_log_import_writes(tmp_path: Path) -> None:
    src = corpus_root() / WITH_AGENTS
    cli = _log_import(src, tmp_path / "cli", tmp_path)
    report = run_batch(
        "import", [str(src)], from_format="claude-code", out=tmp_path / "batch", engine="serial"
    )
    assert report.summary["errors"] == 0
    assert [r["link"] for r in report.rows] == [None, "subagent", "subagent"]  # was: the main log only
    assert all(r["parent"] == report.rows[0]["session"] for r in report.rows[1:])
    assert all("agent-acompact" in r["left_out"] for r in report.rows[:1])  # the compaction call, named
    _same_logs(cli, [Path(r["path"]) for r in report.rows])


def test_batch_import_branches_all_writes_the_forks_log_import_writes(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    src = rewind_session(tmp_path / "src" / "rewind.jsonl")
    cli = _log_import(src, tmp_path / "cli", tmp_path, "--branches", "all")
    report = run_batch(
        "import",
        [str(src)],
        from_format="claude-code",
        out=tmp_path / "batch",
        engine="serial",
        branches="all",
    )
    assert [r["link"] for r in report.rows] == [None, "fork", "fork"]
    _same_logs(cli, [Path(r["path"]) for r in report.rows])
    current = run_batch(
        "import", [str(src)], from_format="claude-code", out=tmp_path / "cur", engine="serial"
    )
    (row,) = current.rows
    assert row["left_out"].count("an abandoned branch") == 2  # reported, as log import reports them


def test_batch_import_cli_takes_branches(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    src = rewind_session(tmp_path / "src" / "rewind.jsonl")
    out = tmp_path / "out"
    args = ["batch", "import", str(src), "--from", "claude-code", "-o", str(out), "--engine", "serial"]
    proc = run_cli(*args, "--branches", "all", "--no-progress", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in out.glob("*.jsonl")) == [
        "rewind-1.fork-1.jsonl",
        "rewind-1.fork-2.jsonl",
        "rewind-1.jsonl",
    ]
    bad = run_cli(*args, "--branches", "some", home=tmp_path)
    assert bad.returncode == 2 and "--branches" in bad.stderr and "Traceback" not in bad.stderr
