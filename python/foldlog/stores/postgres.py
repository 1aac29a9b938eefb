"""PostgreSQL session store: many hosts, one database (psycopg 3).

Layout (schema ``foldlog``, created by ``foldlog db init`` / :func:`init_db` from the versioned
SQL files in ``foldlog/stores/migrations/``):

- ``sessions`` — one row per session: header line, ``last_seq``, size, preview, last holder;
- ``events`` — one row per event, primary key ``(session_id, seq)``, holding the JSONL line
  verbatim (so a load returns the exact bytes written) plus ``type``, ``time`` and usage tokens.

One writer per session: the writer's connection (reused between writers of a process, `pg_pool`)
holds a session-level advisory lock on a hash of the id (``pg_try_advisory_lock``) until the
writer closes, so the lock dies with that connection when the host or process dies. Every batch
goes through ``foldlog.append()`` on the server: one statement, one transaction, one round trip,
and the optimistic check that the batch continues the stored log. Readers share the process's
reader pool; a log is read as a few large chunks aggregated on the server (no Python object per
event).
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator, Mapping
from importlib import resources
from typing import TYPE_CHECKING, Any

from foldlog.errors import InvalidEventError, SessionLockedError, StorageError
from foldlog.stores import pg_pool
from foldlog.stores.base import SessionInfo, StoreWriterBase, check_batch, check_header, check_session_id

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    from foldlog.stores.media import PostgresMediaStore

__all__ = ["SCHEMA_VERSION", "PostgresStore", "PostgresWriter", "init_db", "migrations", "schema_version"]

# the advisory lock (transaction level) that serialises concurrent `foldlog db init` runs
_MIGRATION_LOCK = 0x466F_6C64_6D69_6772  # "Foldmigr"
# a log is read in chunks of about this many bytes (one server round trip each)
_READ_CHUNK_BYTES = 8 << 20


def migrations() -> list[tuple[int, str, str]]:
    """The packaged migrations as ``(version, name, sql)``, in order."""
    found: list[tuple[int, str, str]] = []
    for entry in resources.files("foldlog.stores.migrations").iterdir():
        name = entry.name
        if not name.endswith(".sql"):
            continue
        stem = name[: -len(".sql")]
        number, _, _ = stem.partition("_")
        if not number.isdigit():
            raise StorageError(f"migration file {name!r} must be named NNNN_name.sql")
        found.append((int(number), stem, entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if versions != list(range(1, len(found) + 1)):
        raise StorageError(f"migrations must be numbered 1, 2, … without gaps; found {versions}")
    return found


#: the schema version this foldlog writes and reads
SCHEMA_VERSION = len(migrations())


def _psycopg() -> Any:
    """Import psycopg lazily (``import foldlog`` must not pay for it), with a clear error."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StorageError("the PostgreSQL store needs psycopg 3: pip install 'foldlog[postgres]'") from exc
    return psycopg


def _connect(dsn: str, **kwargs: Any) -> psycopg.Connection[Any]:
    driver = _psycopg()
    try:
        conn: psycopg.Connection[Any] = driver.connect(dsn, autocommit=True, **kwargs)
    except driver.OperationalError as exc:
        raise StorageError(f"cannot connect to PostgreSQL ({_redact(dsn)}): {exc}".strip()) from exc
    return conn


def _redact(dsn: str) -> str:
    """The DSN without its password, for error messages."""
    try:
        from psycopg.conninfo import conninfo_to_dict, make_conninfo

        params = conninfo_to_dict(dsn)
    except Exception:
        return "<unparsable DSN>"
    if "password" in params:
        params["password"] = "***"
    return str(make_conninfo("", **params))


def schema_version(dsn: str) -> int:
    """The schema version of the database behind ``dsn`` (0 when foldlog was never initialised)."""
    with _connect(dsn) as conn:
        return _schema_version(conn)


def _schema_version(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute("SELECT to_regclass('foldlog.schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM foldlog.schema_version").fetchone()
    return int(row[0]) if row else 0


def init_db(dsn: str) -> list[str]:
    """Create or upgrade the foldlog schema; returns the names of the migrations applied now.

    Safe to run concurrently and repeatedly: a transaction-level advisory lock serialises runs,
    and the pending migrations are applied (and recorded in ``foldlog.schema_version``) in one
    transaction, so a failure leaves the schema as it was.
    """
    driver = _psycopg()
    try:
        return _migrate(dsn)
    except driver.Error as exc:
        raise StorageError(f"foldlog db init failed on {_redact(dsn)}: {_pg_message(exc)}") from exc


def _migrate(dsn: str) -> list[str]:
    applied: list[str] = []
    with _connect(dsn) as conn:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute("CREATE SCHEMA IF NOT EXISTS foldlog")
            conn.execute(
                "CREATE TABLE IF NOT EXISTS foldlog.schema_version ("
                " version integer PRIMARY KEY, name text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            current = _schema_version(conn)
            if current > SCHEMA_VERSION:
                raise StorageError(
                    f"the database has foldlog schema version {current}, newer than this foldlog "
                    f"({SCHEMA_VERSION}): upgrade foldlog"
                )
            for version, name, sql in migrations():
                if version <= current:
                    continue
                conn.execute(sql.encode())  # no parameters: the file may hold many statements
                conn.execute(
                    "INSERT INTO foldlog.schema_version (version, name) VALUES (%s, %s)", (version, name)
                )
                applied.append(name)
    return applied


def _pg_message(exc: Exception) -> str:
    """The server's message and detail, without the (long) context of a PL/pgSQL statement."""
    diag = getattr(exc, "diag", None)
    primary = getattr(diag, "message_primary", None)
    if not primary:
        return str(exc).strip()
    detail = getattr(diag, "message_detail", None)
    return f"{primary} ({detail})" if detail else str(primary)


def _holder_here() -> str:
    return f"{os.getpid()}@{socket.gethostname()}"


def _now_ms() -> int:
    return int(time.time() * 1000)


class PostgresStore:
    """Session logs in PostgreSQL. ``PostgresStore(dsn)``; ``init=True`` runs :func:`init_db` first.

    Thread-safe: readers borrow pooled connections; each writer holds one of its own while open.
    The pools are the process's, shared by its stores on this DSN (`foldlog.stores.pg_pool`);
    close the store (or use it as a context manager) to let go of them.
    """

    def __init__(self, dsn: str, *, init: bool = False, max_readers: int = 4) -> None:
        self.dsn = dsn
        if init:
            init_db(dsn)
        with _connect(dsn) as conn:
            found = _schema_version(conn)
        if found == 0:
            raise StorageError(
                f"the database at {_redact(dsn)} has no foldlog schema: run `foldlog db init --dsn …`"
            )
        if found < SCHEMA_VERSION:
            raise StorageError(
                f"the database has foldlog schema version {found}, this foldlog needs "
                f"{SCHEMA_VERSION}: run `foldlog db init --dsn …` to migrate it"
            )
        if found > SCHEMA_VERSION:
            raise StorageError(
                f"the database has foldlog schema version {found}, newer than this foldlog "
                f"({SCHEMA_VERSION}): upgrade foldlog"
            )
        # the process's pools on this database, shared with its other stores (`pg_pool`)
        self._pool: ConnectionPool[Any] = pg_pool.acquire(
            dsn, "readers", max_size=max_readers, configure=_configure_reader
        )
        self._writers = pg_pool.WriterConnections(dsn, lambda: _writer_connection(dsn))
        self._closed = False

    # --- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            pg_pool.release(self._pool)
            self._writers.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PostgresStore({_redact(self.dsn)!r})"

    # --- the SessionStore contract -----------------------------------------------------------

    def read_log(self, session_id: str) -> bytes:
        return b"".join(self.iter_log(session_id))

    def iter_log(self, session_id: str) -> Iterator[bytes]:
        """The log in chunks of whole lines (header first), for feeding a reader batch by batch."""
        check_session_id(session_id)
        driver = _psycopg()
        try:
            with self._pool.connection() as conn:
                yield from _read_chunks(conn, session_id)
        except driver.OperationalError as exc:
            raise StorageError(f"reading session {session_id!r} from PostgreSQL failed: {exc}") from exc

    def open_writer(self, session_id: str, header_line: bytes) -> PostgresWriter:
        header = check_header(session_id, header_line)
        try:
            header_text = header.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidEventError(f"session {session_id!r}: the header line is not UTF-8: {exc}") from exc
        conn = self._writers.get()  # held, with the session's lock, until the writer closes
        try:
            return PostgresWriter._open(conn, session_id, header_text, _holder_here())
        except BaseException:
            self._writers.give_back(conn)
            raise

    def list_sessions(self) -> list[SessionInfo]:
        with self._pool.connection() as conn:
            rows = conn.execute(_LIST_SQL).fetchall()
        return [
            SessionInfo(
                id=r[0],
                created=int(r[1]),
                updated=int(r[2]),
                last_seq=int(r[3]),
                size=int(r[4]),
                turns=int(r[8]),
                holder=_holder_text(r[6], r[7]) if r[7] is not None else None,
                preview=r[5],
                parent=_parent_of(r[9])[0],
                parent_kind=_parent_of(r[9])[1],
            )
            for r in rows
        ]

    def media(self) -> PostgresMediaStore:
        """The media its sessions' messages carry, stored once (``foldlog.media``; `foldlog.stores.media`)."""
        from foldlog.stores.media import PostgresMediaStore

        return PostgresMediaStore(self._pool.connection, _redact(self.dsn))

    def delete_session(self, session_id: str) -> None:
        """Remove a session and its events (refused while a writer holds it)."""
        check_session_id(session_id)
        with _connect(self.dsn) as conn:
            locked = conn.execute(
                "SELECT pg_try_advisory_lock(foldlog.lock_key(%s))", (session_id,)
            ).fetchone()
            if not locked or not locked[0]:
                raise SessionLockedError(
                    f"session {session_id!r} is being written: cannot delete it",
                    holder=_lock_holder(conn, session_id),
                )
            cur = conn.execute("DELETE FROM foldlog.sessions WHERE id = %s", (session_id,))
            if cur.rowcount == 0:
                raise StorageError(f"session {session_id!r} does not exist")


def _configure_reader(conn: psycopg.Connection[Any]) -> None:
    """Reader connections aggregate chunks of ~8 MB on the server: let the sort stay in memory
    (the default 4 MB work_mem spills it to a temporary file) and skip parallel workers, whose
    start-up costs more than they save on one session's rows."""
    conn.execute(
        "SELECT set_config('work_mem', '64MB', false),"
        " set_config('max_parallel_workers_per_gather', '0', false)"
    )


def _writer_connection(dsn: str) -> psycopg.Connection[Any]:
    """A new connection for writers: named after this process, watched by the server."""
    conn = _connect(dsn, application_name=f"foldlog writer {_holder_here()}"[:63])
    try:
        _watch_client(conn)
    except BaseException:
        conn.close()
        raise
    return conn


def _watch_client(conn: psycopg.Connection[Any]) -> None:
    """Make the server notice a dead writer quickly, so that its lock is released.

    A killed process closes its socket and the server sees it at once; a host that vanished does
    not, so TCP keepalives (about 20 s) cover an idle writer, and ``client_connection_check_interval``
    (PostgreSQL 14+) aborts a statement whose client went away while it waited or ran.
    """
    settings = {"tcp_keepalives_idle": "10", "tcp_keepalives_interval": "5", "tcp_keepalives_count": "2"}
    if conn.info.server_version >= 140000:
        settings["client_connection_check_interval"] = "1000"
    calls = ", ".join("set_config(%s, %s, false)" for _ in settings)
    conn.execute(f"SELECT {calls}", [x for kv in settings.items() for x in kv])


_LIST_SQL = """
SELECT s.id, s.created, s.updated, s.last_seq, s.size, s.preview, a.application_name, l.pid, s.turns,
    s.header
FROM foldlog.sessions AS s
LEFT JOIN pg_locks AS l
    ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ((foldlog.lock_key(s.id) >> 32) & 4294967295)::oid
    AND l.objid = (foldlog.lock_key(s.id) & 4294967295)::oid
LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
ORDER BY s.updated DESC, s.id
"""

_HOLDER_SQL = """
SELECT a.application_name, l.pid
FROM pg_locks AS l
LEFT JOIN pg_stat_activity AS a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    AND l.classid = ((foldlog.lock_key(%(id)s) >> 32) & 4294967295)::oid
    AND l.objid = (foldlog.lock_key(%(id)s) & 4294967295)::oid
"""


def _holder_text(application_name: str | None, backend_pid: int) -> str:
    """``pid@host (backend pid N)`` from the holder connection's application name."""
    name = application_name or ""
    who = name[len("foldlog writer ") :] if name.startswith("foldlog writer ") else (name or "unknown client")
    return f"{who} (backend pid {backend_pid})"


def _lock_holder(conn: psycopg.Connection[Any], session_id: str) -> str:
    row = conn.execute(_HOLDER_SQL, {"id": session_id}).fetchone()
    if row is None:  # released between our attempt and this look-up
        return "unknown (the lock was just released)"
    return _holder_text(row[0], int(row[1]))


def _read_chunks(
    conn: psycopg.Connection[Any], session_id: str, events: int | None = None
) -> Iterator[bytes]:
    """Header line, then the event lines in seq order (the first ``events`` only, when given) as
    a few big ``bytes`` chunks.

    Events are append-only and ``last_seq`` only moves forward in the same transaction as the
    inserts, so reading up to the ``last_seq`` seen first is a consistent snapshot without a
    long transaction.
    """
    driver = _psycopg()
    row = conn.execute(
        "SELECT header, last_seq, size FROM foldlog.sessions WHERE id = %s", (session_id,)
    ).fetchone()
    if row is None:
        raise StorageError(f"session {session_id!r} does not exist")
    header, last_seq, size = str(row[0]), int(row[1]), int(row[2])
    if events is not None:
        if events - 1 > last_seq:
            raise StorageError(f"session {session_id!r} holds {last_seq + 1} events, not {events}")
        last_seq = events - 1
    yield header.encode("utf-8") + b"\n"
    if last_seq < 0:
        return
    # events per chunk from the average line size, so a chunk is ~_READ_CHUNK_BYTES
    per_event = max(1, size // (last_seq + 1))
    step = max(1, _READ_CHUNK_BYTES // per_event)
    start = 0
    with conn.cursor(binary=True) as cur:
        while start <= last_seq:
            end = min(last_seq, start + step - 1)
            try:
                cur.execute(
                    "SELECT convert_to(string_agg(line, E'\\n' ORDER BY seq) || E'\\n', 'UTF8'), count(*)"
                    " FROM foldlog.events WHERE session_id = %s AND seq BETWEEN %s AND %s",
                    (session_id, start, end),
                    prepare=True,
                )
            except driver.errors.ProgramLimitExceeded:
                # a chunk of huge lines passed the server's 1 GB value limit: smaller chunks
                if end == start:
                    raise StorageError(f"session {session_id!r}: event {start} is larger than 1 GB") from None
                step = max(1, (end - start + 1) // 4)
                continue
            got = cur.fetchone()
            found = int(got[1]) if got else 0
            if found != end - start + 1 or got is None:
                # never after foldlog's own appends; a row deleted by hand must not vanish silently
                raise StorageError(
                    f"session {session_id!r} is damaged: {end - start + 1 - found} of events "
                    f"{start}..{end} are missing (last_seq is {last_seq})"
                )
            yield bytes(got[0])
            start = end + 1


class PostgresWriter(StoreWriterBase):
    """The single writer of one session: holds a connection, and on it the session's advisory
    lock, until it closes (then the connection, unlocked, waits for the process's next writer)."""

    def __init__(self, conn: psycopg.Connection[Any], session_id: str, holder: str) -> None:
        self._conn: psycopg.Connection[Any] | None = conn
        self.session_id = session_id
        self.holder = holder

    @classmethod
    def _open(
        cls, conn: psycopg.Connection[Any], session_id: str, header: str, holder: str
    ) -> PostgresWriter:
        driver = _psycopg()
        try:
            row = conn.execute(
                "SELECT pg_try_advisory_lock(foldlog.lock_key(%s)), pg_backend_pid()", (session_id,)
            ).fetchone()
            if not row or not row[0]:
                who = _lock_holder(conn, session_id)
                raise SessionLockedError(
                    f"session {session_id!r} is locked by another writer: {who}", holder=who
                )
            created = _created_ms(header)
            conn.execute(
                "INSERT INTO foldlog.sessions (id, created, updated, header, size, holder)"
                " VALUES (%s, %s, %s, %s, %s, %s)"
                " ON CONFLICT (id) DO UPDATE SET holder = excluded.holder",
                (
                    session_id,
                    created,
                    _now_ms(),
                    header,
                    len(header.encode("utf-8")) + 1,
                    f"{holder} (backend pid {row[1]})",
                ),
            )
        except driver.errors.UndefinedFunction as exc:
            raise StorageError("the database has no foldlog schema: run `foldlog db init --dsn …`") from exc
        except driver.OperationalError as exc:
            raise StorageError(f"opening session {session_id!r} for writing failed: {exc}") from exc
        return cls(conn, session_id, f"{holder} (backend pid {row[1]})")

    def _live(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise StorageError(f"the writer of session {self.session_id!r} is closed")
        return self._conn

    def read_log(self) -> bytes:
        driver = _psycopg()
        try:
            return b"".join(_read_chunks(self._live(), self.session_id))
        except driver.OperationalError as exc:
            raise self._lost(exc) from exc

    def read_prefix(self, events: int) -> bytes:
        try:
            return b"".join(_read_chunks(self._live(), self.session_id, events))
        except _psycopg().OperationalError as exc:
            raise self._lost(exc) from exc

    def store_checkpoint(self, data: bytes, events: int) -> bool:
        """Kept in ``foldlog.checkpoints`` (`foldlog.stores.postgres_checkpoint`)."""
        from foldlog.stores import postgres_checkpoint

        try:
            return postgres_checkpoint.store(self._live(), self.session_id, data, events)
        except _psycopg().Error as exc:
            raise self._lost(exc) from exc

    def read_checkpoint(self) -> tuple[bytes, bytes] | None:
        from foldlog.stores import postgres_checkpoint

        try:
            return postgres_checkpoint.read(self._live(), self.session_id)
        except _psycopg().OperationalError as exc:
            raise self._lost(exc) from exc

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        check_batch(lines, first_seq, count)
        driver = _psycopg()
        conn = self._live()
        try:
            conn.execute(
                "SELECT foldlog.append(%s, %s, %s, %b)",
                (self.session_id, first_seq, count, lines),
                prepare=True,
            )
        except driver.Error as exc:
            raise self._append_error(exc, first_seq) from exc

    def erase(self, tombstones: Mapping[int, bytes], erasure: bytes, erasure_seq: int) -> int:
        """The erased rows' tombstones, the erasure event and the media rows only they referenced
        in one transaction, under this writer's lock, then the old row versions vacuumed
        (`foldlog.stores.postgres_erase`); returns the media rows removed."""
        from foldlog.stores.postgres_erase import erase_rows

        try:
            return erase_rows(self._live(), self.session_id, tombstones, erasure, erasure_seq)
        except _psycopg().Error as exc:
            raise self._append_error(exc, erasure_seq) from exc

    def _append_error(self, exc: Exception, first_seq: int) -> Exception:
        """Map a failed append to the foldlog error that says what happened."""
        state = getattr(exc, "sqlstate", None) or ""
        where = f"session {self.session_id!r}: append at seq {first_seq}"
        if state in ("FLSEQ", "FLNOS"):  # raised by foldlog.append(): the log is not where we think
            return StorageError(_pg_message(exc))
        if state.startswith("22"):
            return InvalidEventError(
                f"{where}: bad batch (each line must be a UTF-8 JSON object with type and seq): "
                f"{_pg_message(exc)}"
            )
        if state == "23502":
            return InvalidEventError(f'{where}: a line of the batch has no string "type"')
        conn = self._conn
        if not state or state.startswith(("08", "57")) or conn is None or conn.closed or conn.broken:
            return self._lost(exc)
        return StorageError(f"{where} failed: {_pg_message(exc)}")

    def _lost(self, exc: Exception) -> StorageError:
        # the lock died with the connection: this writer must not go on (another may have taken over)
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        return StorageError(
            f"lost the connection to PostgreSQL while writing session {self.session_id!r}; "
            f"the session lock is released, reopen the session: {exc}"
        )

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:  # unlocked, then kept for the next writer of this process, or closed
            pg_pool.WriterConnections.give_back(conn)

    def __enter__(self) -> PostgresWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else "open"
        return f"<PostgresWriter {self.session_id!r} {state} {self.holder}>"


def _parent_of(header: str) -> tuple[str | None, str | None]:
    """The header's parent link: (parent id, kind), or (None, None)."""
    try:
        link = json.loads(header).get("parent")
    except (ValueError, AttributeError):
        return None, None
    if not isinstance(link, dict) or not isinstance(link.get("id"), str):
        return None, None
    kind = link.get("kind")
    return link["id"], kind if isinstance(kind, str) else None


def _created_ms(header: str) -> int:
    """The header's ``createdAt`` (epoch ms) when it has a sane one, else now."""
    try:
        value = json.loads(header).get("createdAt")
    except (ValueError, AttributeError):
        return _now_ms()
    if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
        return int(value)
    return _now_ms()
