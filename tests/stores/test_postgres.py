"""PostgreSQL store: schema and migrations, the writer lock, crash safety, many workers. Real server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import pytest

from foldlog import _core
from foldlog.errors import InvalidEventError, SessionLockedError, StorageError
from foldlog.stores import postgres as pg
from foldlog.stores.postgres import SCHEMA_VERSION, PostgresStore, init_db, migrations, schema_version
from tests.stores.store_helpers import REPO, read_message, start_worker
from tests.stores.store_logdata import header, header_line, line, load_with_reader, parse_log, step_batch
from tests.support.history import three_ls_calls

# --- schema and migrations -------------------------------------------------------------------


def test_migrations_are_numbered_sql_files_in_the_package() -> None:
    found = migrations()
    assert [v for v, _, _ in found] == list(range(1, SCHEMA_VERSION + 1))
    assert found[0][1] == "0001_initial"
    assert "CREATE TABLE foldlog.events" in found[0][2]


def test_init_db_applies_each_migration_once(pg_empty_db: str) -> None:
    assert schema_version(pg_empty_db) == 0
    assert init_db(pg_empty_db) == [name for _, name, _ in migrations()]
    assert init_db(pg_empty_db) == []
    assert schema_version(pg_empty_db) == SCHEMA_VERSION
    with psycopg.connect(pg_empty_db) as conn:
        rows = conn.execute("SELECT version, name FROM foldlog.schema_version ORDER BY version").fetchall()
        cols = {
            r[0]
            for r in conn.execute(
                "SELECT column_name FROM information_schema.columns"
                " WHERE table_schema = 'foldlog' AND table_name = 'events'"
            )
        }
    assert rows == [(v, n) for v, n, _ in migrations()]
    assert {"session_id", "seq", "type", "time", "line", "input_tokens", "output_tokens"} <= cols


def test_concurrent_init_db_runs_do_not_collide(pg_empty_db: str) -> None:
    code = "import sys; from foldlog.stores.postgres import init_db; print(len(init_db(sys.argv[1])))"
    procs = [
        subprocess.Popen([sys.executable, "-c", code, pg_empty_db], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    applied = sorted(int(p.communicate(timeout=60)[0]) for p in procs)
    assert [p.returncode for p in procs] == [0, 0, 0]
    assert applied == [0, 0, SCHEMA_VERSION]


def test_a_database_without_the_schema_says_to_run_db_init(pg_empty_db: str) -> None:
    with pytest.raises(StorageError, match="foldlog db init"):
        PostgresStore(pg_empty_db)
    with PostgresStore(pg_empty_db, init=True) as store:
        assert store.list_sessions() == []


def test_a_newer_schema_is_refused(pg_empty_db: str) -> None:
    init_db(pg_empty_db)
    with psycopg.connect(pg_empty_db, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO foldlog.schema_version (version, name) VALUES (%s, 'from_the_future')",
            (SCHEMA_VERSION + 1,),
        )
    with pytest.raises(StorageError, match="newer"):
        PostgresStore(pg_empty_db)
    with pytest.raises(StorageError, match="newer"):
        init_db(pg_empty_db)


def test_cli_db_init_and_status(pg_empty_db: str) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "foldlog.cli.db", "db", *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=str(REPO),
        )

    before = cli("status", "--dsn", pg_empty_db)
    assert before.returncode == 1 and "not initialised" in before.stdout
    first = cli("init", "--dsn", pg_empty_db)
    assert first.returncode == 0, first.stderr
    assert "applied 0001_initial" in first.stdout
    again = cli("init", "--dsn", pg_empty_db)
    assert again.returncode == 0 and "up to date" in again.stdout
    after = cli("status", "--dsn", pg_empty_db)
    assert after.returncode == 0 and f"schema version {SCHEMA_VERSION}" in after.stdout
    bad = cli("init", "--dsn", "postgresql://nobody@127.0.0.1:1/none")
    assert bad.returncode == 1 and "cannot connect" in bad.stderr


# --- the writer ---------------------------------------------------------------------------------


def test_a_second_writer_in_the_same_process_is_refused_with_the_backend_pid(pstore: PostgresStore) -> None:
    with pstore.open_writer("w", header_line("w")) as writer:
        backend = writer.holder.rsplit("backend pid ", 1)[1].rstrip(")")
        with pytest.raises(SessionLockedError) as err:
            pstore.open_writer("w", header_line("w"))
        assert err.value.holder == writer.holder
        assert f"{os.getpid()}@" in str(err.value) and f"backend pid {backend}" in str(err.value)
    with pstore.open_writer("w", header_line("w")):
        pass


def test_server_side_checks_refuse_a_whole_batch(pstore: PostgresStore) -> None:
    head = header("v")
    with pstore.open_writer("v", head[:-1]) as writer:
        good = line({"type": "user/message", "seq": 0, "time": 1, "data": {"role": "user", "content": "a"}})
        wrong_seq = line({"type": "user/message", "seq": 7, "time": 2, "data": {}})
        with pytest.raises(StorageError, match="line 2 of the batch has seq 7, expected 1"):
            writer.append(good + wrong_seq, 0, 2)
        with pytest.raises(InvalidEventError, match="JSON"):
            writer.append(good + b'{"type": "x", "seq": 1\n', 0, 2)
        with pytest.raises(InvalidEventError, match="type"):
            writer.append(good + b'{"seq": 1, "time": 3}\n', 0, 2)
        with pytest.raises(InvalidEventError, match="UTF8"):
            writer.append(good + b'{"type": "\xff", "seq": 1}\n', 0, 2)
        assert writer.read_log() == head
        writer.append(good, 0, 1)
        assert writer.read_log() == head + good


def test_events_rows_carry_type_time_and_usage(pstore: PostgresStore, pg_dsn: str) -> None:
    with pstore.open_writer("u", header_line("u")) as writer:
        batch, n = step_batch(0, 0, 2, "a")
        writer.append(batch, 0, n)
    with psycopg.connect(pg_dsn) as conn:
        rows = conn.execute(
            "SELECT seq, type, time, input_tokens, output_tokens, line FROM foldlog.events"
            " WHERE session_id = 'u' ORDER BY seq"
        ).fetchall()
    events = [json.loads(x) for x in batch.splitlines()]
    assert [(r[0], r[1], r[2]) for r in rows] == [(e["seq"], e["type"], e["time"]) for e in events]
    assert [r[5].encode() + b"\n" for r in rows] == batch.splitlines(keepends=True)
    usage = [(r[3], r[4]) for r in rows if r[1] == "assistant/message"]
    assert usage == [(100, 10)]
    assert all(r[3] is None for r in rows if r[1] != "assistant/message")


def test_large_logs_are_read_in_several_chunks(
    pstore: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    head = header("big")
    expected = [head]
    with pstore.open_writer("big", head[:-1]) as writer:
        seq = 0
        for step in range(40):
            batch, n = step_batch(seq, step, 40, "a")
            writer.append(batch, seq, n)
            expected.append(batch)
            seq += n
    monkeypatch.setattr(pg, "_READ_CHUNK_BYTES", 2_000)
    chunks = list(pstore.iter_log("big"))
    assert len(chunks) > 10
    assert all(c.endswith(b"\n") for c in chunks)
    assert b"".join(chunks) == b"".join(expected)


def test_a_lost_connection_ends_the_writer(pstore: PostgresStore, pg_dsn: str) -> None:
    writer = pstore.open_writer("gone", header_line("gone"))
    backend = int(writer.holder.rsplit("backend pid ", 1)[1].rstrip(")"))
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (backend,))
    batch, n = step_batch(0, 0, 2, "a")
    with pytest.raises(StorageError, match="lost the connection"):
        writer.append(batch, 0, n)
    with pytest.raises(StorageError, match="closed"):
        writer.append(batch, 0, n)
    writer.close()
    with pstore.open_writer("gone", header_line("gone")) as again:  # the lock went with the connection
        again.append(batch, 0, n)


# --- processes ----------------------------------------------------------------------------------


def test_two_processes_race_for_one_session_exactly_one_wins(pg_dsn: str, pstore: PostgresStore) -> None:
    spec = {"kind": "postgres", "dsn": pg_dsn}
    for round_ in range(2):
        sid = f"race-{round_}"
        at = time.time() + 1.5  # both try at the same moment; the winner holds until told
        procs = [start_worker(spec, "try-open", session=sid, at=at, wait=True) for _ in range(2)]
        answers = [read_message(p) for p in procs]
        for p in procs:
            p.communicate("release\n", timeout=60)
        assert [p.returncode for p in procs] == [0, 0]
        winners = [a for a in answers if a.get("ok")]
        losers = [a for a in answers if a.get("locked")]
        assert len(winners) == 1 and len(losers) == 1, answers
        assert f"{winners[0]['pid']}@" in losers[0]["holder"]
        assert winners[0]["holder"] == losers[0]["holder"]
        assert pstore.read_log(sid) == header(sid)


def _backend_of(holder: str) -> int:
    return int(holder.rsplit("backend pid ", 1)[1].rstrip(")"))


def test_a_writer_killed_mid_transaction_loses_nothing_committed(
    pg_dsn: str, pstore: PostgresStore, tmp_path: Path
) -> None:
    sid = "victim"
    proc = start_worker({"kind": "postgres", "dsn": pg_dsn}, "append-kill", session=sid, batches=5)
    opened = read_message(proc)
    backend = _backend_of(opened["holder"])
    committed = [read_message(proc)["committed"] for _ in range(5)]
    with psycopg.connect(pg_dsn) as blocker, psycopg.connect(pg_dsn, autocommit=True) as monitor:
        # hold the session row so that the next batch stops inside its transaction, after its
        # event rows are inserted (the foreign-key check waits for this lock)
        blocker.execute("SELECT 1 FROM foldlog.sessions WHERE id = %s FOR UPDATE", (sid,))
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 30
        while True:
            row = monitor.execute(
                "SELECT wait_event_type, query FROM pg_stat_activity WHERE pid = %s", (backend,)
            ).fetchone()
            if row and row[0] == "Lock":
                break
            assert time.monotonic() < deadline, f"the writer never blocked: {row}"
            time.sleep(0.02)
        assert "foldlog.append" in row[1]
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        # the server notices the dead client (client_connection_check_interval) and aborts
        while monitor.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", (backend,)).fetchone():
            assert time.monotonic() < deadline + 30, "the dead writer's backend lingers"
            time.sleep(0.05)
        blocker.rollback()
    log = pstore.read_log(sid)
    _, events = parse_log(log)
    assert len(events) == committed[-1] + 1, "exactly the committed batches"
    expected = header(sid)
    seq = 0
    for step in range(5):
        batch, n = step_batch(seq, step, 6, "victim")
        expected += batch
        seq += n
    assert log == expected
    info = next(s for s in pstore.list_sessions() if s.id == sid)
    assert info.last_seq == committed[-1] and info.size == len(log) and info.holder is None
    # the lock died with the process: a new writer continues at the next seq
    with pstore.open_writer(sid, header_line(sid)) as writer:
        batch, n = step_batch(seq, 5, 6, "heir")
        writer.append(batch, seq, n)
    final = pstore.read_log(sid)
    assert parse_log(final)[1][-1]["type"] == "turn/end"
    assert load_with_reader(final, tmp_path) == (seq + n, 1 + 2 * 5 + 1)


@pytest.mark.slow
def test_fifty_sessions_move_between_four_workers_step_by_step(
    pg_dsn: str, pstore: PostgresStore, tmp_path: Path
) -> None:
    n_sessions, n_workers, n_steps = 50, 4, 5
    sessions = [f"multi-{i:02d}" for i in range(n_sessions)]
    spec = {"kind": "postgres", "dsn": pg_dsn}
    procs = [
        start_worker(spec, "steps", index=w, workers=n_workers, steps=n_steps, sessions=sessions, timeout=240)
        for w in range(n_workers)
    ]
    answers = [read_message(p) for p in procs]
    assert [p.wait(timeout=300) for p in procs] == [0] * n_workers
    assert all(a.get("ok") for a in answers), answers
    listed = {s.id: s for s in pstore.list_sessions()}
    for i, sid in enumerate(sessions):
        log = pstore.read_log(sid)
        head, events = parse_log(log)
        assert head["id"] == sid
        assert listed[sid].last_seq == len(events) - 1 and listed[sid].size == len(log)
        assert listed[sid].turns == 1 and listed[sid].holder is None
        # each step was written by the worker it was handed to, in order
        authors = [
            e["data"]["message"]["content"].rsplit(" by ", 1)[1]
            for e in events
            if e["type"] == "assistant/message"
        ]
        assert authors == [f"worker {(i + k) % n_workers}" for k in range(n_steps)], sid
        expected = header(sid)
        seq = 0
        for k in range(n_steps):
            batch, n = step_batch(seq, k, n_steps, f"worker {(i + k) % n_workers}")
            expected += batch
            seq += n
        assert log == expected
        # user + (assistant + tool) per tool step + final assistant
        assert load_with_reader(log, tmp_path) == (seq, 1 + 2 * (n_steps - 1) + 1)


def test_a_writer_asks_the_server_to_watch_for_its_death(pstore: PostgresStore, pg_dsn: str) -> None:
    with pstore.open_writer("watch", header_line("watch")) as writer:
        backend = _backend_of(writer.holder)
        conn = writer._live()
        assert conn.execute("SHOW client_connection_check_interval").fetchone() == ("1s",)
        assert conn.execute("SHOW tcp_keepalives_idle").fetchone() == ("10",)
        with psycopg.connect(pg_dsn) as other:
            name = other.execute("SELECT application_name FROM pg_stat_activity WHERE pid = %s", (backend,))
            assert name.fetchone() == (f"foldlog writer {os.getpid()}@{socket.gethostname()}"[:63],)


def test_delete_session_is_refused_while_written_and_removes_everything(
    pstore: PostgresStore, pg_dsn: str
) -> None:
    with pstore.open_writer("del", header_line("del")) as writer:
        batch, n = step_batch(0, 0, 2, "a")
        writer.append(batch, 0, n)
        with pytest.raises(SessionLockedError):
            pstore.delete_session("del")
    pstore.delete_session("del")
    with pytest.raises(StorageError):
        pstore.read_log("del")
    with psycopg.connect(pg_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM foldlog.events WHERE session_id = 'del'").fetchone() == (0,)
    with pytest.raises(StorageError, match="does not exist"):
        pstore.delete_session("del")


def test_a_missing_event_row_is_reported_not_skipped(pstore: PostgresStore, pg_dsn: str) -> None:
    with pstore.open_writer("hole", header_line("hole")) as writer:
        batch, n = step_batch(0, 0, 2, "a")
        writer.append(batch, 0, n)
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("DELETE FROM foldlog.events WHERE session_id = 'hole' AND seq = 2")
    with pytest.raises(StorageError, match=r"damaged: 1 of events 0\.\.\d+ are missing"):
        pstore.read_log("hole")


def test_a_session_opened_on_postgres_persists_and_resumes(pstore: PostgresStore) -> None:
    from foldlog import Session

    with Session.open(pstore, "e2e", system="You are terse.") as s:
        s.add({"role": "user", "content": "hi"})
        s.append_event("turn/start", {"turn": 1})
        s.flush()
        with pytest.raises(SessionLockedError):
            Session.open(pstore, "e2e")
        s.add({"role": "assistant", "content": "hello"})
        expected = s.derive_messages()
    assert [m["role"] for m in expected] == ["system", "user", "assistant"]
    with Session.open(pstore, "e2e") as again:
        assert again.derive_messages() == expected
        again.add({"role": "user", "content": "more"})
    head, events = parse_log(pstore.read_log("e2e"))
    assert head["id"] == "e2e"
    assert [e["type"] for e in events].count("user/message") == 2
    info = next(i for i in pstore.list_sessions() if i.id == "e2e")
    assert info.preview == "hi" and info.turns == 1 and info.holder is None


@pytest.mark.parametrize("bad", ["", "a\x00b", "tab\there", "x" * 201])
def test_unusable_session_ids_are_refused(pstore: PostgresStore, bad: str) -> None:
    with pytest.raises(InvalidEventError, match="session id"):
        pstore.open_writer(bad, header_line("x"))
    with pytest.raises(InvalidEventError, match="session id"):
        pstore.read_log(bad)


def test_a_released_session_reloads_from_postgres_without_tokenizing_again(
    pstore: PostgresStore, pg_dsn: str
) -> None:
    """Issue 17.3: `release()` on a PostgreSQL-backed session drops the log and keeps no bytes of
    its own; the next use reads it back from the server, with the token counts flushed beside the
    events, so the same history, counts and request bytes come back without tokenizing anything again."""
    from foldlog import Session

    model = "deepseek-chat"  # an exact tokenizer: its counts travel in the log
    s = Session.open(pstore, "released")
    s.model = model  # before the first message, so that every flushed message carries its count
    s.add({"role": "system", "content": "sys"})
    three_ls_calls(s)
    before = list(s.derive_messages())
    count = s.token_count(model)
    counts = s.token_counts(model)
    assert counts is not None
    body = s.wire_json()
    s.release()
    assert s.released and s._log is None and s._released is None, "nothing kept: the store has it"
    # the store is the only place left to read it from: what it holds is what comes back
    data = pstore.read_log("released")
    _, stored = parse_log(data)
    assert Session.from_bytes(data).derive_messages() == before
    messages = [e for e in stored if e["type"].endswith(("/message", "/result"))]
    assert len(messages) == len(before) and all("tokens" in e for e in messages), "counts flushed"
    # proof that nothing is tokenized again: the stored count of the first user message is
    # changed on the server while the session is released, and the reloaded count follows it
    user = next(e for e in stored if e["type"] == "user/message")
    n = user["tokens"]["deepseek-v4"]
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        changed = conn.execute(
            "UPDATE foldlog.events SET line = replace(line, %s, %s) WHERE session_id = %s AND seq = %s",
            (f'"deepseek-v4":{n}}}', f'"deepseek-v4":{n + 1000}}}', "released", user["seq"]),
        ).rowcount
    assert changed == 1
    assert s.derive_messages() == before
    assert not s.released
    assert s.token_count(model) == count + 1000 and count.exact, "counted from the stored lines"
    assert _core.cached_token_events(s._core) == len(before)
    assert s.token_counts(model) == [counts[0], counts[1] + 1000, *counts[2:]]
    assert len(s.plan_history(model)) == len(before)
    assert s.wire_json() == body
    # writing goes on in the same stored session
    s.add({"role": "user", "content": "more"})
    s.close()
    with Session.open(pstore, "released") as again:
        assert list(again.derive_messages()) == [*before, {"role": "user", "content": "more"}]
