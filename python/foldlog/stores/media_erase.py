"""The media of erased events removed with them (docs/log-format.md, "Erasure"; docs/retention.md).

An erased event that referenced an image, audio or a file (``foldlog-media:sha256:<hash>``) leaves
its bytes in the media store unless the erasure removes them too. The *candidates* are the hashes
the erased events referenced, read from the stored lines the erasure replaces; each is removed
when no event of any session of the store references it any more (the same session's other
events, other sessions, forks that copied the events: retention's scan,
`foldlog.stores.retention.referenced_media`). Only candidates go: an erasure never sweeps
unrelated blobs (that is retention's work, with its grace period).

**A writer storing the same content meanwhile.** Storing content that is stored already marks it
as in use (the file's mtime, the row's ``touched``), and the event referencing it is written a
moment later. A blob marked in use after the erasure began (later than ``since``) is kept: a
session that appended the same bytes right then will reference it. The check and the removal are
one step — the file is renamed out of its name first (a ``put`` after that finds no file and
stores the bytes again), then judged by the mtime it was left with; the row is deleted by a
statement whose condition PostgreSQL re-checks under the row's lock — so no put is lost between
them (``touched`` is each client's clock: clocks far apart move that line). After removing files
the logs are scanned again, and a blob some log now references (an event stored between the two
scans) is put back. What stays open is a batch stored *before* the erasure began and still
unwritten after it: the same content in another live session, appended but not flushed across the
whole erasure; its event would reference a removed blob (`MissingMediaError` when read). That gap
is accepted rather than keeping every recently stored blob for a grace period, as retention does:
an erasure is asked for to make the bytes go now.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.errors import StorageError
from foldlog.stores.media import REF_PREFIX, FileMediaStore, referenced_hashes

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("foldlog.stores.media")


def candidates(old: bytes, new: bytes) -> set[str]:
    """The hashes a log's bytes referenced before an erasure (``old``) and no longer reference
    after it (``new``): what the erased events alone held."""
    return referenced_hashes(old) - referenced_hashes(new)


# --- the file store --------------------------------------------------------------------------------


def remove_from_folder(folder: Path, wanted: Collection[str], since: float) -> int:
    """Remove the blobs of ``wanted`` from ``folder/media`` that no session file in ``folder``
    references and that were not stored again after ``since`` (a file mtime: the file system's
    clock); returns how many were removed. A scan that cannot read a log removes nothing (the
    erasure is stored; its media stay for retention, with a warning)."""
    if not wanted:
        return 0
    media = FileMediaStore(folder / "media")
    try:
        left = set(wanted) - _referenced(folder)
    except StorageError as exc:
        log.warning("erasure stored, but its media were kept: the logs could not be scanned: %s", exc)
        return 0
    taken: dict[str, bytes] = {}
    for sha in sorted(left):
        data = _take(media, sha, since)
        if data is not None:
            taken[sha] = data
    if not taken:
        return 0
    _sync(media.root)
    try:
        again = _referenced(folder)
    except StorageError:
        again = set(taken)  # cannot tell: nothing is taken from a log that may need it
    for sha in sorted(again & taken.keys()):
        media.put(taken.pop(sha))  # referenced by an event stored meanwhile: back in place
    return len(taken)


def _referenced(folder: Path) -> set[str]:
    from foldlog.stores.file import FileStore
    from foldlog.stores.retention import referenced_media

    return referenced_media(FileStore(folder))


def _take(media: FileMediaStore, sha: str, since: float) -> bytes | None:
    """Remove the blob ``sha`` unless it was stored again after ``since``; its bytes when removed."""
    path = media.path_for(sha)
    held = media.root / f".{sha}.{secrets.token_hex(4)}.erasing"
    try:
        os.rename(path, held)  # out of its name: a put from now on stores the bytes again
    except FileNotFoundError:
        return None
    except OSError as e:
        raise StorageError(f"cannot remove the media file {path}: {e.strerror or e}") from e
    try:
        if held.stat().st_mtime > since:
            os.replace(held, path)  # stored again since the erasure began: in use (same bytes)
            return None
        data = held.read_bytes()
        held.unlink()
    except OSError as e:
        raise StorageError(f"cannot remove the media file {path}: {e.strerror or e}") from e
    return data


def _sync(folder: Path) -> None:
    """Make the removals durable (a crash must not bring an erased blob back)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        log.warning("erased media removed, but the folder %s could not be synced: %s", folder, exc)


# --- PostgreSQL ------------------------------------------------------------------------------------

#: an erased candidate's row, unless stored again since the erasure began or referenced by a live
#: row (a reference is ``REF_PREFIX`` + the hash in a line, as `referenced_hashes` reads logs)
_DELETE_SQL = """
DELETE FROM foldlog.media AS m
WHERE m.sha256 = ANY(%(wanted)s) AND m.touched <= %(since)s
  AND NOT EXISTS (SELECT 1 FROM foldlog.events AS e WHERE strpos(e.line, %(prefix)s || m.sha256) > 0)
  AND NOT EXISTS (SELECT 1 FROM foldlog.sessions AS s WHERE strpos(s.header, %(prefix)s || m.sha256) > 0)
"""


def erased_lines_media(cur: psycopg.Cursor[Any], session_id: str, seqs: Collection[int]) -> set[str]:
    """The hashes the stored lines of ``seqs`` reference (read before they are replaced)."""
    cur.execute(
        "SELECT line FROM foldlog.events WHERE session_id = %s AND seq = ANY(%s)", (session_id, sorted(seqs))
    )
    return referenced_hashes("\n".join(str(row[0]) for row in cur.fetchall()).encode())


def delete_rows(cur: psycopg.Cursor[Any], wanted: Collection[str], since_ms: int) -> int:
    """Delete the rows of ``wanted`` no row of the store references any more and not stored
    again after ``since_ms``, in the caller's transaction (the erasure's: its tombstones are
    what the scan sees); returns how many were deleted."""
    if not wanted:
        return 0
    cur.execute(_DELETE_SQL, {"wanted": sorted(wanted), "since": since_ms, "prefix": REF_PREFIX})
    return max(cur.rowcount, 0)


__all__ = ["candidates", "delete_rows", "erased_lines_media", "remove_from_folder"]
