"""The PostgreSQL store at volume: pools shared per process, writer connections reused without
their locks, and 100 concurrent writers on one server losing and doubling nothing. Real server."""

from __future__ import annotations

import os
import threading
import time
from collections import Counter

import psycopg
import pytest

from foldlog.errors import SessionLockedError
from foldlog.stores import pg_pool
from foldlog.stores.postgres import PostgresStore
from tests.stores.store_logdata import header_line, parse_log, step_batch


@pytest.fixture
def clean_dsn(pg_dsn: str) -> str:
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        conn.execute("TRUNCATE foldlog.checkpoints, foldlog.events, foldlog.sessions")
    return pg_dsn


def _backend(holder: str) -> int:
    return int(holder.rsplit("backend pid ", 1)[1].rstrip(")"))


def test_the_stores_of_one_process_share_their_pools(clean_dsn: str) -> None:
    first = PostgresStore(clean_dsn, max_readers=2)
    second = PostgresStore(clean_dsn, max_readers=3)
    try:
        assert first._pool is second._pool
        assert pg_pool.users(clean_dsn, "readers") == 2
        assert first._pool.max_size == 3, "grown to what the larger store asked for"
        first.close()
        first.close()  # closing twice lets go once
        assert pg_pool.users(clean_dsn, "readers") == 1
        assert second.list_sessions() == []
    finally:
        second.close()
    assert pg_pool.users(clean_dsn, "readers") == 0
    assert second._pool.closed


def test_a_closed_writer_hands_its_connection_on_without_its_lock(clean_dsn: str) -> None:
    with PostgresStore(clean_dsn) as store:
        first = store.open_writer("a", header_line("a"))
        backend = _backend(first.holder)
        first.close()
        second = store.open_writer("b", header_line("b"))
        try:
            assert _backend(second.holder) == backend, "the connection was reused, not opened again"
            with psycopg.connect(clean_dsn, autocommit=True) as other:
                held = other.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = %s", (backend,)
                ).fetchone()
                assert held == (1,), "only b's lock: a's went with its writer"
                got = other.execute("SELECT pg_try_advisory_lock(foldlog.lock_key('a'))").fetchone()
                assert got == (True,)
            with pytest.raises(SessionLockedError):
                store.open_writer("b", header_line("b"))
        finally:
            second.close()


def test_idle_writer_connections_are_bounded_and_closed_with_the_last_store(clean_dsn: str) -> None:
    def writer_backends() -> int:
        with psycopg.connect(clean_dsn, autocommit=True) as other:
            row = other.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE %s",
                (f"foldlog writer {os.getpid()}@%",),
            ).fetchone()
        return int(row[0]) if row else -1

    def settles_at(expected: int) -> bool:
        """The server sees closed connections go a moment after the client closes them."""
        deadline = time.monotonic() + 10
        while writer_backends() != expected:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    first, second = PostgresStore(clean_dsn), PostgresStore(clean_dsn)
    n = pg_pool.WRITERS_IDLE + 5
    writers = [first.open_writer(f"s{i}", header_line(f"s{i}")) for i in range(n)]
    assert writer_backends() == n
    for w in writers:
        w.close()
    assert settles_at(pg_pool.WRITERS_IDLE), "the ones beyond the bound are closed"
    first.close()
    with second.open_writer("s0", header_line("s0")):  # the other store still reuses them
        assert settles_at(pg_pool.WRITERS_IDLE)
    second.close()
    assert settles_at(0), "the last store closes the idle connections"


def test_an_idle_writer_connection_the_server_ended_is_replaced(clean_dsn: str) -> None:
    with PostgresStore(clean_dsn) as store:
        writer = store.open_writer("a", header_line("a"))
        backend = _backend(writer.holder)
        writer.close()
        with psycopg.connect(clean_dsn, autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", (backend,))
        with store.open_writer("a", header_line("a")) as again:
            assert _backend(again.holder) != backend
            batch, n = step_batch(0, 0, 2, "after")
            again.append(batch, 0, n)
        assert parse_log(store.read_log("a"))[1][-1]["seq"] == n - 1


def test_a_hundred_concurrent_writers_lose_and_double_no_write(clean_dsn: str) -> None:
    """100 threads hand 25 sessions around (each opens one, appends a step where the log ends,
    closes it: 8 times); every committed batch is stored exactly once, at its seqs."""
    writers, sessions, rounds = 100, 25, 8
    ids = [f"vol-{i:02d}" for i in range(sessions)]
    committed: list[tuple[str, int, int, str]] = []
    errors: list[BaseException] = []
    refused = Counter[str]()
    start = threading.Barrier(writers)
    with PostgresStore(clean_dsn) as store:
        for sid in ids:
            store.open_writer(sid, header_line(sid)).close()

        def work(w: int) -> None:
            try:
                start.wait()
                for r in range(rounds):
                    sid = ids[(w + r) % sessions]
                    tag = f"w{w}r{r}"
                    deadline = time.monotonic() + 120
                    while True:
                        try:
                            writer = store.open_writer(sid, header_line(sid))
                            break
                        except SessionLockedError:
                            refused[sid] += 1
                            assert time.monotonic() < deadline, f"{sid} never became free"
                            time.sleep(0.002)
                    try:
                        first = writer.read_log().count(b"\n") - 1  # header, then one line per event
                        batch, n = step_batch(first, 1, 3, tag)
                        writer.append(batch, first, n)
                        committed.append((sid, first, n, tag))
                    finally:
                        writer.close()
            except BaseException as exc:
                errors.append(exc)

        began = time.perf_counter()
        threads = [threading.Thread(target=work, args=(w,)) for w in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.perf_counter() - began
        assert errors == []
        assert len(committed) == writers * rounds
        assert sum(refused.values()) > 0, "the writers did contend for the sessions"
        for sid in ids:
            _, events = parse_log(store.read_log(sid))  # checks seqs are 0, 1, 2, … without gaps
            mine = sorted((first, n, tag) for s, first, n, tag in committed if s == sid)
            assert sum(n for _, n, _ in mine) == len(events), f"{sid}: a write lost or doubled"
            for first, n, tag in mine:
                authors = {
                    e["data"]["message"]["content"]
                    for e in events[first : first + n]
                    if "message" in e["data"]
                }
                assert authors == {f"step 1 by {tag}", "1"}, (sid, first, tag, authors)
    with psycopg.connect(clean_dsn) as conn:
        rows = conn.execute(
            "SELECT line::json -> 'data' -> 'message' ->> 'content' FROM foldlog.events"
            " WHERE type = 'assistant/message'"
        ).fetchall()
    stored = Counter(r[0] for r in rows)
    assert stored == Counter(f"step 1 by {tag}" for *_, tag in committed), "each batch stored once"
    print(
        f"\n{writers * rounds} appends by {writers} writers in {took:.2f} s ({writers * rounds / took:.0f}/s)"
    )
