"""The PostgreSQL store's connections, shared per process and database by every
`PostgresStore` on that database (docs/retention.md, "PostgreSQL at volume").

A host that serves many sessions opens a store (or many) and many writers; without sharing, each
store had its own reader pool and each writer opened (and authenticated) a connection of its own
and closed it with the session. Here:

- **readers** (``read_log``, listings, media) borrow a connection for one statement from one
  `psycopg_pool` pool per process and database, of at most the largest ``max_readers`` any open
  store asked for (`acquire` / `release`);
- **writers** hold a connection for as long as they hold their session (the session-level
  advisory lock lives on it: one lock per session, taken once, never per request). When a writer
  closes, its lock is released and the connection waits for the next session to open instead of
  being closed (`WriterConnections`): opening a session costs a round trip, not a connection.
  A connection that comes back broken, or that the server ended while it waited, is dropped.

A pool lives while a store that uses it is open. A child process made by ``fork`` does not
inherit its parent's connections (their sockets are the parent's): it makes its own.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog.errors import StorageError

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

__all__ = ["WRITERS_IDLE", "SharedPool", "WriterConnections", "acquire", "release"]

#: at most this many writer connections wait, per process and database, for the next session to
#: open (the server's connections are the scarce thing: more are closed)
WRITERS_IDLE = 32


@dataclass
class SharedPool:
    """A pool and the number of open stores using it."""

    pool: ConnectionPool[Any]
    users: int


_POOLS: dict[tuple[int, str, str], SharedPool] = {}
_LOCK = threading.Lock()


def _forget_after_fork() -> None:
    """In a forked child: the parent's pools are not ours (closing them would close the
    parent's sockets' server sessions too), so they are dropped without closing."""
    global _LOCK
    _POOLS.clear()
    _IDLE.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_after_fork)


def _pool_class() -> Any:
    try:
        from psycopg_pool import ConnectionPool
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise StorageError(
            "the PostgreSQL store needs psycopg_pool: pip install 'foldlog[postgres]'"
        ) from exc
    return ConnectionPool


def acquire(
    dsn: str,
    role: str,
    *,
    max_size: int,
    configure: Callable[[psycopg.Connection[Any]], None],
) -> ConnectionPool[Any]:
    """The process's pool of ``role`` connections to ``dsn`` (made on first use), grown to
    ``max_size`` when it is smaller. Each call must be matched by one `release`."""
    key = (os.getpid(), dsn, role)
    with _LOCK:
        shared = _POOLS.get(key)
        if shared is None:
            pool_class = _pool_class()
            pool = pool_class(
                dsn,
                min_size=1,
                max_size=max(1, max_size),
                kwargs={"autocommit": True},
                configure=configure,
                open=True,
                name=f"foldlog-{role}",
            )
            shared = _POOLS[key] = SharedPool(pool, 0)
        elif shared.pool.max_size < max_size:
            shared.pool.resize(shared.pool.min_size, max_size)
        shared.users += 1
        return shared.pool


def release(pool: ConnectionPool[Any]) -> None:
    """One user of ``pool`` is done; the last one closes it."""
    with _LOCK:
        for key, shared in list(_POOLS.items()):
            if shared.pool is pool:
                shared.users -= 1
                if shared.users > 0:
                    return
                del _POOLS[key]
                break
        else:
            return  # released already (a store closed twice), or made before a fork
    pool.close()


def users(dsn: str, role: str) -> int:
    """How many open stores of this process use the ``role`` pool of ``dsn`` (0: none)."""
    shared = _POOLS.get((os.getpid(), dsn, role))
    return shared.users if shared is not None else 0


class _IdleWriters:
    """The writer connections of one process and database that no writer holds now."""

    def __init__(self) -> None:
        self.conns: list[psycopg.Connection[Any]] = []
        self.users = 0


_IDLE: dict[tuple[int, str], _IdleWriters] = {}


@atexit.register
def _close_idle_at_exit() -> None:
    """Close the connections still waiting when the process ends (a store never closed keeps
    its database's idle writers): the server sees a clean goodbye instead of a dropped socket."""
    with _LOCK:
        waiting = [idle for key, idle in _IDLE.items() if key[0] == os.getpid()]
        _IDLE.clear()
    for idle in waiting:
        for conn in idle.conns:
            conn.close()


class WriterConnections:
    """A store's share of the process's idle writer connections on its database. `get` hands a
    writer an idle connection (checked alive first) or, when there is none, a new one made by
    ``connect`` — so a server that refuses connections fails the open at once, as it always did;
    `give_back` takes it back when the writer closes: unlocked (``pg_advisory_unlock_all``) and
    kept for the next writer, or closed when it is broken, when `WRITERS_IDLE` wait already, or
    when no store of this process uses the database any more."""

    def __init__(self, dsn: str, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self._key = (os.getpid(), dsn)
        self._connect = connect
        self._closed = False
        with _LOCK:
            _IDLE.setdefault(self._key, _IdleWriters()).users += 1

    def get(self) -> psycopg.Connection[Any]:
        while True:
            with _LOCK:
                idle = _IDLE.get(self._key)
                conn = idle.conns.pop() if idle is not None and idle.conns else None
            if conn is None:
                conn = self._connect()
                break
            try:
                conn.execute("SELECT 1")  # the server may have ended it while it waited
                break
            except Exception:
                conn.close()
        conn._foldlog_writers = self._key  # type: ignore[attr-defined]
        return conn

    @staticmethod
    def give_back(conn: psycopg.Connection[Any]) -> None:
        """A writer is done with ``conn`` (its lock may still be held: released here)."""
        key = getattr(conn, "_foldlog_writers", None)
        if not conn.closed and not conn.broken:
            try:
                conn.execute("SELECT pg_advisory_unlock_all()")
            except Exception:
                conn.close()
        with _LOCK:
            idle = _IDLE.get(key) if key is not None and key[0] == os.getpid() else None
            if idle is not None and not conn.closed and len(idle.conns) < WRITERS_IDLE:
                idle.conns.append(conn)
                return
        conn.close()

    def close(self) -> None:
        """This store is done; the last store of the process on the database closes the idle
        connections (a writer still open keeps its own, closed when given back)."""
        with _LOCK:
            if self._closed:
                return
            self._closed = True
            idle = _IDLE.get(self._key)
            if idle is None:
                return
            idle.users -= 1
            if idle.users > 0:
                return
            del _IDLE[self._key]
        for conn in idle.conns:
            conn.close()
