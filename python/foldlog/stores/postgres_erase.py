"""An erasure in the PostgreSQL store (docs/log-format.md, "Erasure"; docs/retention.md).

One transaction on the writer's own connection, which holds the session's advisory lock: the rows
of the erased events get their tombstone lines (UPDATE), the erasure event is appended through
``foldlog.append()`` (its optimistic check: the log ends where the erasure was planned), and the
session's row gets its size and its preview again (the preview is the start of the first user
message: it may be the erased text), its checkpoint is deleted (it holds lines of the events),
and the ``foldlog.media`` rows only the erased events referenced are deleted
(`foldlog.stores.media_erase`). Nothing of it is stored unless all of it is.

An UPDATE leaves the old row versions behind as dead tuples until a vacuum removes them, so the
erasure then vacuums the tables (`VACUUM` cannot run inside the transaction): afterwards the
erased text is in no live or dead row. Earlier copies outside the tables — the write-ahead log
until the server recycles it, base backups, replicas' own WAL — are the operator's to expire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foldlog.errors import StorageError
from foldlog.log.grammar.kinds import USER_MESSAGE
from foldlog.stores.media_erase import delete_rows, erased_lines_media

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("foldlog.stores.postgres")

# the text of a line's data.content (\u0000 masked: text cannot hold U+0000), as foldlog.append reads it
_CONTENT = "foldlog.content_text(replace(e.line, '\\u0000', '\\ufffd')::json -> 'data' -> 'content')"

_SESSION_ROW_SQL = f"""
UPDATE foldlog.sessions AS s SET
    size = octet_length(s.header) + 1 + (
        SELECT coalesce(sum(octet_length(e.line) + 1), 0) FROM foldlog.events AS e WHERE e.session_id = s.id
    ),
    preview = (
        SELECT left({_CONTENT}, 200) FROM foldlog.events AS e
        WHERE e.session_id = s.id AND e.type = %(user)s AND {_CONTENT} IS NOT NULL
        ORDER BY e.seq LIMIT 1
    )
WHERE s.id = %(id)s
"""


def erase_rows(
    conn: psycopg.Connection[Any],
    session_id: str,
    tombstones: Mapping[int, bytes],
    erasure: bytes,
    erasure_seq: int,
) -> int:
    """Store the erasure in one transaction on ``conn`` (the writer's: it holds the lock), then
    vacuum the rows' old versions away; returns how many media rows went with the erased events
    (`foldlog.stores.media_erase`). `StorageError` when a row is missing; the driver's errors
    go to the caller (the writer maps them)."""
    since = int(time.time() * 1000)  # media stored again after this are in use: kept
    with conn.transaction():
        with conn.cursor() as cur:
            media = erased_lines_media(cur, session_id, tombstones.keys())
            for seq, line in sorted(tombstones.items()):
                cur.execute(
                    "UPDATE foldlog.events SET line = %s WHERE session_id = %s AND seq = %s",
                    (line.decode("utf-8"), session_id, seq),
                )
                if cur.rowcount != 1:
                    raise StorageError(
                        f"session {session_id!r} has no stored event #{seq}: nothing was erased"
                    )
            cur.execute("SELECT foldlog.append(%s, %s, 1, %b)", (session_id, erasure_seq, erasure))
            cur.execute(_SESSION_ROW_SQL, {"id": session_id, "user": USER_MESSAGE})
            # the checkpoint holds lines of the erased events (and covers rows that changed)
            cur.execute("DELETE FROM foldlog.checkpoints WHERE session_id = %s", (session_id,))
            removed = delete_rows(cur, media, since)
    _vacuum(conn, ("foldlog.media",) if removed else ())
    return removed


def _vacuum(conn: psycopg.Connection[Any], more: tuple[str, ...] = ()) -> None:
    """Remove the old row versions now (a role that may not vacuum the tables leaves them to
    autovacuum, with a warning)."""
    for table in ("foldlog.events", "foldlog.sessions", "foldlog.checkpoints", *more):
        try:
            conn.execute(f"VACUUM {table}")
        except Exception as exc:  # the erasure is stored; only the clean-up failed
            log.warning(
                "erasure stored, but VACUUM %s failed (autovacuum will remove the old rows): %s", table, exc
            )


__all__ = ["erase_rows"]
