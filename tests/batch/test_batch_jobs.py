"""The per-session work of each job is foldlog's own: the rows equal what the session API, the
compactor and the interchange registries say for the same session (serial engine)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.batch import Item, JobSpec, load_toml, make_grid, read_table, run_batch, run_item
from foldlog.batch.cost import session_cost, usage_cost
from foldlog.batch.grid import parse_ints
from foldlog.compaction import Compactor
from foldlog.compaction.summary import NoSummary
from foldlog.errors import ConfigError
from foldlog.interchange.exports import export
from foldlog.log.stats import log_stats
from tests.batch.conftest import GRID, corpus_root


def _largest(logs: Path, n: int = 3) -> list[Path]:
    return sorted(logs.glob("*.jsonl"), key=lambda p: p.stat().st_size)[-n:]


def test_stats_row_is_the_session_api(corpus_logs: Path) -> None:
    for path in _largest(corpus_logs):
        (row,) = run_item(JobSpec("stats"), Item(str(path), "log", str(path)))
        s = Session.load(path)
        stats = log_stats(s)
        assert row["error"] is None and row["session"] == s.id
        assert (row["events"], row["turns"], row["steps"]) == (
            stats["events"],
            stats["turns"],
            stats["steps"],
        )
        assert row["messages_assistant"] == stats["messages"].get("assistant", 0)
        assert row["tool_calls"] == stats["tool_calls"] and row["compactions"] == stats["compactions"]
        # counted as the session's own model (`Session.counting_model`): a Claude session by the
        # calibrated estimate, never called exact; a Codex or τ-bench one by its model's tokenizer
        tokens = s.token_count()
        assert row["tokens"] == int(tokens) and row["tokens_exact"] is tokens.exact
        assert (row["tokenizer"], row["tokens_model"]) == (s.tokenizer().name, s.counting_model())
        assert row["prompt_tokens"] == stats["usage"]["promptTokens"]
        assert row["needs_repair"] == s.normalized_dirty
        # what `log inspect` reports: each reply at the model that answered it (imported
        # transcripts name it), never at a guess
        assert row["model"] is None and (row["cost"], row["currency"]) == session_cost(s)


def test_stats_prices_usage_at_the_given_model(corpus_logs: Path) -> None:
    path = _largest(corpus_logs, 1)[0]
    (row,) = run_item(JobSpec("stats", model="deepseek-v4-flash"), Item(str(path), "log", str(path)))
    assert (row["cost"], row["currency"]) == session_cost(Session.load(path), "deepseek-v4-flash")
    assert row["cost"] > 0 and row["currency"] == "USD"


def test_usage_cost_is_the_cost_layers_price() -> None:
    from foldlog.cost.prices import price_request
    from foldlog.log.grammar.types import Usage

    usage = {"promptTokens": 1_500, "cacheHitTokens": 1_000, "cacheMissTokens": 500, "completionTokens": 200}
    expected = price_request(
        Usage(prompt_tokens=1_500, completion_tokens=200, cache_hit_tokens=1_000, cache_miss_tokens=500),
        "deepseek-v4-pro",
    )
    assert expected is not None
    assert usage_cost(usage, "deepseek-v4-pro") == (expected.total, expected.currency)
    assert usage_cost(usage, "some-other-model") == (None, None)


def test_compact_eval_rows_are_the_compactors_plan_and_mechanical_fold(corpus_logs: Path) -> None:
    path = _largest(corpus_logs, 1)[0]
    rows = run_item(JobSpec("compact-eval", grid=GRID), Item(str(path), "log", str(path)))
    assert [(r["window"], r["tail_tokens"], r["keep_policy"]) for r in rows] == [
        (p.window, p.tail_tokens, p.keep_policy) for p in GRID
    ]
    for point, row in zip(GRID, rows, strict=True):
        s = Session.load(path)
        s.model = s.counting_model()  # the session's own model, as the job counts
        compactor = Compactor(s, NoSummary(point.window), point.settings())
        preview = compactor.plan()
        result = asyncio.run(compactor.compact("manual"))
        assert result is not None and result.folded > 0 and result.mechanical
        assert row["error"] is None
        assert (row["messages"], row["pinned"], row["tail"]) == (
            preview.messages,
            preview.pinned,
            preview.tail,
        )
        assert row["tokens_before"] == preview.tokens_before
        assert (row["folded"], row["kept"], row["digest_tokens"]) == (
            result.folded,
            result.kept,
            result.digest_tokens,
        )
        assert row["tokens_after"] == result.tokens_after < row["tokens_before"]
        assert row["saved"] == row["tokens_before"] - row["tokens_after"]
        assert row["triggered"] == (row["tokens"] >= point.window * point.settings().compact_ratio)
    # the two points fold differently (the grid is a real comparison)
    assert rows[0]["tokens_after"] != rows[1]["tokens_after"]


def test_compact_eval_reports_an_uneconomic_plan(tmp_path: Path) -> None:
    s = Session(system="short", id="tiny")
    s.add({"role": "user", "content": "hello"})
    s.add({"role": "assistant", "content": "hi"})
    s.add({"role": "user", "content": "bye"})
    s.add({"role": "assistant", "content": "bye"})
    path = tmp_path / "tiny.jsonl"
    s.save(path)
    (row,) = run_item(JobSpec("compact-eval", grid=GRID[:1]), Item(str(path), "log", str(path)))
    assert row["error"] is None and row["folded"] == 0 and row["saved"] == 0
    assert row["skipped"] is not None and row["tokens_after"] == row["tokens_before"]


def test_a_failing_session_is_a_row_with_its_error_and_the_job_goes_on(
    corpus_logs: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    good = _largest(corpus_logs, 2)
    for p in good:
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / "broken.jsonl").write_text('{"type": "session", "version": 1, "id": "broken"}\n{not json\n{}\n')
    report = run_batch("stats", [str(folder)], out=tmp_path / "stats.csv", engine="serial")
    errors = [r for r in report.rows if r["error"]]
    assert len(report.rows) == 3 and len(errors) == 1
    assert errors[0]["source"].endswith("broken.jsonl") and "CorruptLogError" in errors[0]["error"]
    assert report.summary["errors"] == 1 and report.summary["sessions"] == 2


def test_a_transcript_that_cannot_be_read_is_a_row(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("[1, 2]\n")
    report = run_batch(
        "stats", [str(bad)], from_format="claude-code", out=tmp_path / "s.jsonl", engine="serial"
    )
    (row,) = report.rows
    assert row["session"] is None and "TranscriptError" in row["error"] and "JSON array" in row["error"]


def test_import_writes_the_logs_the_importer_records(tmp_path: Path) -> None:
    from foldlog.interchange import convert

    src = corpus_root() / "codex-localpush"
    report = run_batch(
        "import", [str(src / "*.jsonl")], from_format="codex", out=tmp_path / "logs", engine="serial"
    )
    assert report.summary["errors"] == 0 and report.summary["sessions"] == len(list(src.glob("*.jsonl")))
    for row in report.rows:
        (conv,) = convert("codex", row["source"])
        loaded = Session.load(row["path"])
        assert len(loaded.events) - int(loaded.repair_report.get("events_added", 0)) == len(conv.events)
        assert row["events"] == log_stats(loaded)["events"]
    assert (tmp_path / "logs" / ".foldlog-batch" / "import.csv").exists()
    again = run_batch(
        "import", [str(src / "*.jsonl")], from_format="codex", out=tmp_path / "logs", engine="serial"
    )
    assert again.ran == 0 and again.skipped == len(report.items)


def test_import_refuses_to_overwrite_another_sources_session(tmp_path: Path, corpus_logs: Path) -> None:
    src = corpus_root() / "codex-localpush"
    first = next(iter(sorted(src.glob("*.jsonl"))))
    copy = tmp_path / "copy" / first.name
    copy.parent.mkdir()
    copy.write_bytes(first.read_bytes())
    report = run_batch(
        "import", [str(first), str(copy)], from_format="codex", out=tmp_path / "logs", engine="serial"
    )
    assert [r["error"] is None for r in report.rows] == [True, False]
    assert "exists" in report.rows[1]["error"]


def test_export_is_the_exporter_registrys(corpus_logs: Path, tmp_path: Path) -> None:
    paths = _largest(corpus_logs, 2)
    report = run_batch("export", [str(p) for p in paths], out=tmp_path / "out", engine="serial")
    assert report.summary["errors"] == 0
    for path, row in zip(paths, report.rows, strict=True):
        data = Path(row["path"]).read_bytes()
        assert data == export(Session.load(path), "openai").text.encode()
        assert row["messages"] == len(json.loads(data))
    wired = run_batch("export", [str(paths[0])], out=tmp_path / "wire", engine="serial", wire=True)
    assert (
        Path(wired.rows[0]["path"]).read_bytes()
        == export(Session.load(paths[0]), "openai", wire=True).text.encode()
    )


def test_rerun_skips_what_is_done_and_retries_errors(corpus_logs: Path, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    for p in _largest(corpus_logs, 3):
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / "broken.jsonl").write_text("{not json\n{}\n")
    out = tmp_path / "stats.jsonl"
    first = run_batch("stats", [str(folder)], out=out, engine="serial")
    assert (first.ran, first.skipped) == (4, 0)
    extra = sorted(corpus_logs.glob("*.jsonl"))[0]
    (folder / extra.name).write_bytes(extra.read_bytes())
    second = run_batch("stats", [str(folder)], out=out, engine="serial")
    assert (second.ran, second.skipped) == (2, 3)  # the new log and the broken one again
    assert len(read_table(out)) == 5
    done = {r["source"]: r for r in first.rows}
    assert all(done[r["source"]] == r for r in second.rows if r["source"] in done and not r["error"])


def test_a_done_list_of_another_job_is_refused(corpus_logs: Path, tmp_path: Path) -> None:
    path = _largest(corpus_logs, 1)[0]
    out = tmp_path / "t.jsonl"
    run_batch("compact-eval", [str(path)], out=out, engine="serial", points=GRID[:1])
    with pytest.raises(ConfigError, match="done-list of another job"):
        run_batch("compact-eval", [str(path)], out=out, engine="serial", points=GRID)


def test_the_three_table_formats_hold_the_same_rows(corpus_logs: Path, tmp_path: Path) -> None:
    paths = [str(p) for p in _largest(corpus_logs, 3)]
    tables: dict[str, list[dict[str, Any]]] = {}
    for suffix in (".parquet", ".csv", ".jsonl"):
        report = run_batch("stats", paths, out=tmp_path / f"s{suffix}", engine="serial")
        tables[suffix] = read_table(report.table)
        assert len(tables[suffix]) == 3
    assert tables[".parquet"] == tables[".jsonl"]
    # CSV has text cells: the same values, as text
    for a, b in zip(tables[".jsonl"], tables[".csv"], strict=True):
        assert {k: "" if v is None else str(v) for k, v in a.items()} == b


def test_bad_arguments_fail_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown batch job"):
        run_batch("count", ["x"], out=tmp_path / "o.csv")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no such file"):
        run_batch("stats", [str(tmp_path / "missing")], out=tmp_path / "o.csv", engine="serial")
    with pytest.raises(ConfigError, match="by its suffix"):
        run_batch("stats", [str(tmp_path)], out=tmp_path / "o.xlsx", engine="serial")
    with pytest.raises(ConfigError, match="--from"):
        run_batch("import", [str(tmp_path)], out=tmp_path / "logs", engine="serial")
    with pytest.raises(ConfigError, match="needs --engine ray"):
        run_batch("stats", [str(tmp_path)], out=tmp_path / "o.csv", engine="local", address="127.0.0.1:1")
    with pytest.raises(ConfigError, match="names no foldlog log"):
        run_batch("stats", [str(tmp_path)], out=tmp_path / "o.csv", engine="serial")


def test_the_grid_from_arguments_and_toml(tmp_path: Path) -> None:
    assert parse_ints("32000, 128k", "--windows") == [32_000, 128_000]
    points = make_grid([32_000], [4_096, 16_384], ["errors", "none"])
    assert len(points) == 4 and points[0].label == "w32k/t4k/errors"
    toml = tmp_path / "grid.toml"
    toml.write_text('windows = [16000]\ntail_tokens = [2048]\nkeep_policies = ["user_marked"]\n')
    (point,) = load_toml(toml)
    assert (point.window, point.tail_tokens, point.keep_policy) == (16_000, 2_048, "user_marked")
    for bad, match in (
        ("windows = 5\n", "must be a list"),
        ("window = [1]\n", "unknown key"),
        ("windows = [0]\n", "positive"),
        ('keep_policies = ["all"]\n', "unknown keep policy"),
    ):
        toml.write_text(bad)
        with pytest.raises(ConfigError, match=match):
            load_toml(toml)
    with pytest.raises(ConfigError, match="not a number"):
        parse_ints("lots", "--tails")


SUMMARY_USAGE = {"prompt_tokens": 9_000, "completion_tokens": 300, "cache_hit_tokens": 1_000}


def scripted_summariser() -> Any:
    """A summary provider factory (module level: it pickles to worker processes)."""
    from foldlog.providers.scripted import Scripted

    reply = {"content": "## Goal\n- summarised by the scripted provider", "usage": SUMMARY_USAGE}
    return Scripted([reply] * 8, model="deepseek-v4-flash", context_window=64_000)


@pytest.mark.parametrize("engine", ["serial", "local"])
def test_compact_eval_with_a_summary_provider_reports_its_tokens_and_cost(
    engine: str, corpus_logs: Path, tmp_path: Path
) -> None:
    path = _largest(corpus_logs, 1)[0]
    report = run_batch(
        "compact-eval",
        [str(path)],
        out=tmp_path / "e.jsonl",
        engine=engine,  # type: ignore[arg-type]
        workers=1,
        points=GRID[:1],
        summary_provider=scripted_summariser,
    )
    (row,) = report.rows
    assert row["error"] is None and row["mechanical"] is False and row["folded"] > 0
    calls = row["summary_prompt_tokens"] // SUMMARY_USAGE["prompt_tokens"]
    assert calls >= 1 and row["summary_completion_tokens"] == calls * SUMMARY_USAGE["completion_tokens"]
    usage = {
        "promptTokens": calls * 9_000,
        "completionTokens": calls * 300,
        "cacheHitTokens": calls * 1_000,
        "cacheMissTokens": calls * 8_000,
    }
    assert (row["summary_cost"], row["summary_currency"]) == usage_cost(usage, "deepseek-v4-flash")
    mechanical = run_item(JobSpec("compact-eval", grid=GRID[:1]), Item(str(path), "log", str(path)))[0]
    assert row["digest_tokens"] != mechanical["digest_tokens"] and mechanical["mechanical"] is True
