"""Sessions read from a PostgreSQL store (``--dsn``; a real server on loopback, the store tests'):
the same rows as the same logs read from files, in every worker process."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldlog.batch import run_batch
from foldlog.errors import ConfigError
from foldlog.stores.postgres import PostgresStore, init_db
from tests.batch.conftest import create_database


def _copy_into(store: PostgresStore, path: Path) -> str:
    """Store a log file's lines as they are (its header, then its events) under its id."""
    import json

    data = path.read_bytes()
    head, body = data.split(b"\n", 1)
    sid = str(json.loads(head)["id"])
    writer = store.open_writer(sid, head + b"\n")
    try:
        writer.append(body, 0, body.count(b"\n"))
    finally:
        writer.close()
    return sid


def test_stats_over_a_postgres_store_match_the_files(
    pg_server: str, corpus_logs: Path, tmp_path: Path
) -> None:
    dsn = create_database(pg_server)
    init_db(dsn)
    paths = sorted(corpus_logs.glob("*.jsonl"), key=lambda p: p.stat().st_size)[-3:]
    with PostgresStore(dsn) as store:
        ids = [_copy_into(store, p) for p in paths]
    from_files = run_batch("stats", [str(p) for p in paths], out=tmp_path / "f.jsonl", engine="serial")
    by_id = {r["session"]: {k: v for k, v in r.items() if k != "source"} for r in from_files.rows}
    for engine in ("serial", "local"):
        report = run_batch("stats", [], dsn=dsn, out=tmp_path / f"{engine}.jsonl", engine=engine, workers=2)
        assert sorted(r["source"] for r in report.rows) == sorted(f"pg:{i}" for i in ids)
        assert report.summary["errors"] == 0
        for row in report.rows:
            assert {k: v for k, v in row.items() if k != "source"} == by_id[row["session"]]
    one = run_batch("stats", [ids[0]], dsn=dsn, out=tmp_path / "one.jsonl", engine="serial")
    assert [r["session"] for r in one.rows] == [ids[0]]
    with pytest.raises(ConfigError, match="no session 'nope'"):
        run_batch("stats", ["nope"], dsn=dsn, out=tmp_path / "x.jsonl", engine="serial")
