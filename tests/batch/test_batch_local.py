"""The process-pool engine (``--engine local``) gives exactly the serial rows, and the command
prints compact-eval's table and writes its chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from foldlog.batch import read_table, run_batch
from foldlog.batch.jobs import JobName
from foldlog.cli.main import main
from tests.batch.conftest import GRID


@pytest.mark.parametrize("job", ["stats", "compact-eval"])
def test_local_engine_gives_the_serial_rows(
    job: JobName, corpus_logs: Path, serial_results: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    report = run_batch(
        job,
        [str(corpus_logs)],
        out=tmp_path / "t.jsonl",
        engine="local",
        workers=2,
        points=GRID,
    )
    assert report.rows == serial_results[job]
    assert read_table(report.table) == serial_results[job]


def test_cli_compact_eval_prints_the_table_and_writes_the_chart(
    corpus_logs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "eval.parquet"
    grid = ["--windows", "16k,32000", "--tails", "4096", "--keep", "errors,none"]
    code = main(
        [
            "batch",
            "compact-eval",
            str(corpus_logs),
            "-o",
            str(out),
            "--engine",
            "serial",
            *grid,
            "--no-progress",
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    lines = printed.out.splitlines()
    assert lines[0].startswith("compact-eval: ") and "0 error(s)" in lines[0]
    assert "window" in lines[1] and "saved" in lines[1]
    assert len(lines) == 2 + 4  # one line per grid point
    assert all(line.rstrip().endswith("%") for line in lines[2:])
    png = Path(str(out) + ".png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    rows = read_table(out)
    assert {(r["window"], r["keep_policy"]) for r in rows} == {
        (16_000, "errors"),
        (16_000, "none"),
        (32_000, "errors"),
        (32_000, "none"),
    }
    assert "chart" in printed.err and "already done" in printed.err


def test_cli_reports_a_failed_session_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "broken.jsonl").write_text("{not json\n{}\n")
    code = main(["batch", "stats", str(tmp_path), "-o", str(tmp_path / "s.csv"), "--engine", "serial"])
    err = capsys.readouterr().err
    # its first line is neither a header nor an event: not a log (a CorruptLogError), named so
    assert code == 1 and "broken.jsonl" in err and "NotALogError" in err


def test_cli_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["batch", "compact-eval", str(tmp_path), "-o", str(tmp_path / "e.csv"), "--windows", "big"])
    assert exc.value.code == 2 and "not a number" in capsys.readouterr().err
