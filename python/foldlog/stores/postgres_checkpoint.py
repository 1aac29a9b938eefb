"""Checkpoints in the PostgreSQL store (``foldlog.checkpoints``, schema version 3).

A long session's checkpoint (`foldlog.log.checkpoint`; the core's rows checkpoint,
`foldlog_core::log::checkpoint::encode_rows`) is one row beside the session's: written by the
session's writer, which holds the session's lock, read when the session is opened or taken up
after a release with the rows stored after it in the same round trip. It is a cache: failing to
write one is logged and the session goes on; a row that does not match is ignored by the core.
An erasure deletes it in its own transaction (`foldlog.stores.postgres_erase`), a deletion of
the session cascades to it.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("foldlog.stores.postgres")

_STORE_SQL = """
INSERT INTO foldlog.checkpoints (session_id, events, data, written) VALUES (%s, %s, %s, %s)
ON CONFLICT (session_id) DO UPDATE SET events = excluded.events, data = excluded.data,
    written = excluded.written
"""

# the checkpoint, and the stored lines from the last event it covers on (its check) in one
# aggregate: a checkpoint is written at a release or after a compaction, so the tail is short
_READ_SQL = """
SELECT c.data, (
    SELECT convert_to(string_agg(e.line, E'\\n' ORDER BY e.seq) || E'\\n', 'UTF8')
    FROM foldlog.events AS e WHERE e.session_id = c.session_id AND e.seq >= c.events - 1
)
FROM foldlog.checkpoints AS c WHERE c.session_id = %s
"""


def store(conn: psycopg.Connection[Any], session_id: str, data: bytes, events: int) -> bool:
    """Keep ``data`` as the checkpoint of ``session_id``'s first ``events`` events; whether it
    was kept (a failure is logged: a checkpoint is a cache)."""
    import psycopg

    try:
        conn.execute(_STORE_SQL, (session_id, events, data, int(time.time() * 1000)), prepare=True)
    except psycopg.Error as exc:
        if conn.closed or conn.broken:
            raise  # the writer's connection (and its lock) is gone: the writer must say so
        log.warning("session %r: no checkpoint stored (%s)", session_id, exc)
        return False
    return True


def read(conn: psycopg.Connection[Any], session_id: str) -> tuple[bytes, bytes] | None:
    """The checkpoint of ``session_id`` and the stored lines from the last event it covers on,
    or ``None`` when it has none."""
    row = conn.execute(_READ_SQL, (session_id,), prepare=True).fetchone()
    if row is None:
        return None
    return bytes(row[0]), bytes(row[1]) if row[1] is not None else b""


__all__ = ["read", "store"]
