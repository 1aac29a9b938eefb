"""Media stored once: the bytes of the images, audio and files that messages carry, kept by
content (their SHA-256) beside the session logs, so a screenshot sent in a hundred requests, or
in a hundred sessions of one store, is stored once (docs/retention.md, "Media stored once").

Two stores behind one protocol, `MediaStore`:

- `FileMediaStore`: one file per content, ``<root>/media/<sha256>`` beside the session files
  (created 0600 in a 0700 folder, written to a temporary file, fsynced and renamed into place);
- `PostgresMediaStore`: one row per content in ``foldlog.media`` (migration ``0002_media``).

The logs hold references (`foldlog.log.media` makes and resolves them); what a store holds
that no log references any more goes with `remove_unreferenced` (retention's prune calls it).
Storing content again marks it as in use now, and `remove_unreferenced` leaves content stored
within its ``grace`` alone: a session that is appending an event referencing it (the content
stored first, the event flushed a moment later) never loses it to a prune running meanwhile.
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from foldlog.errors import MissingMediaError, StorageError

if TYPE_CHECKING:
    import psycopg

#: the name of a stored content: the SHA-256 of its bytes, 64 lowercase hex digits
SHA256 = re.compile(r"[0-9a-f]{64}")
#: content stored (or stored again) this recently is never removed as unreferenced, seconds
DEFAULT_GRACE = 3600.0


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


#: what stands in a block's payload in place of its base64 data, followed by the hash (the
#: core's ``MEDIA_REF_PREFIX``; docs/log-format.md, "Media references")
REF_PREFIX = "foldlog-media:sha256:"
#: a reference in a log's bytes, for the stores' byte scans: retention keeps what the remaining
#: logs reference
_REFERENCE = re.compile(rb"foldlog-media:sha256:([0-9a-f]{64})")


def referenced_hashes(data: bytes) -> set[str]:
    """The hashes of the media a log's bytes reference."""
    return {m.decode("ascii") for m in _REFERENCE.findall(data)}


def _missing(sha256: str) -> MissingMediaError:
    return MissingMediaError(f"media {sha256} is not in the media store", sha256=sha256)


@runtime_checkable
class MediaStore(Protocol):
    """Content-addressed bytes shared by the sessions of one session store."""

    def put(self, data: bytes) -> str:
        """Store ``data`` (once: content stored already is only marked as in use now); returns
        its SHA-256. Durable when it returns."""
        ...

    def get(self, sha256: str) -> bytes:
        """The bytes stored as ``sha256``; `MissingMediaError` when there are none."""
        ...

    def hashes(self) -> set[str]:
        """Every content stored."""
        ...

    def remove_unreferenced(self, referenced: Iterable[str], *, grace: float = DEFAULT_GRACE) -> int:
        """Remove the content not in ``referenced`` and not stored within the last ``grace``
        seconds; returns how many were removed."""
        ...


class FileMediaStore:
    """Media as files ``<root>/<sha256>`` (``root`` is the ``media`` folder beside the logs)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    @classmethod
    def beside(cls, log_path: str | os.PathLike[str]) -> FileMediaStore:
        """The media store of a session file: the ``media`` folder in the file's folder."""
        return cls(Path(log_path).parent / "media")

    def path_for(self, sha256: str) -> Path:
        if not SHA256.fullmatch(sha256):
            raise StorageError(f"not a media hash: {sha256!r}")
        return self.root / sha256

    def put(self, data: bytes) -> str:
        sha = sha256_of(data)
        path = self.path_for(sha)
        try:
            os.utime(path)  # stored already: in use now (see remove_unreferenced's grace)
            return sha
        except FileNotFoundError:
            pass
        except OSError as e:
            raise StorageError(f"cannot use the media file {path}: {e.strerror or e}") from e
        from foldlog.stores.file import private_folder

        private_folder(self.root)
        tmp = self.root / f".{sha}.{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)  # the same bytes under the same name: a race is harmless
            dir_fd = os.open(self.root, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise StorageError(f"cannot store media in {self.root}: {e.strerror or e}") from e
        return sha

    def get(self, sha256: str) -> bytes:
        path = self.path_for(sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise _missing(sha256) from None
        except OSError as e:
            raise StorageError(f"cannot read the media file {path}: {e.strerror or e}") from e
        if sha256_of(data) != sha256:
            raise StorageError(
                f"the media file {path} does not hold the bytes named {sha256} (changed on disk)"
            )
        return data

    def hashes(self) -> set[str]:
        try:
            return {p.name for p in self.root.iterdir() if SHA256.fullmatch(p.name)}
        except FileNotFoundError:
            return set()

    def remove_unreferenced(self, referenced: Iterable[str], *, grace: float = DEFAULT_GRACE) -> int:
        keep = set(referenced)
        before = time.time() - grace
        removed = 0
        for sha in self.hashes() - keep:
            path = self.root / sha
            try:
                if path.stat().st_mtime >= before:
                    continue
                path.unlink()
            except FileNotFoundError:
                continue
            removed += 1
        return removed

    def __repr__(self) -> str:
        return f"FileMediaStore({str(self.root)!r})"


#: a pooled connection, borrowed for one statement (`PostgresStore`'s reader pool)
Connect = Callable[[], AbstractContextManager["psycopg.Connection[Any]"]]


class PostgresMediaStore:
    """Media as rows of ``foldlog.media`` (``sha256`` primary key, ``data`` bytea), through the
    `PostgresStore`'s connection pool (`PostgresStore.media`)."""

    def __init__(self, connect: Connect, where: str = "PostgreSQL") -> None:
        self._connect = connect
        self._where = where

    def _run(self, what: str, fn: Callable[[psycopg.Connection[Any]], Any]) -> Any:
        import psycopg

        try:
            with self._connect() as conn:
                return fn(conn)
        except psycopg.Error as exc:
            raise StorageError(f"{what} in {self._where} failed: {exc}".strip()) from exc

    def put(self, data: bytes) -> str:
        sha = sha256_of(data)
        now = int(time.time() * 1000)

        def store(conn: psycopg.Connection[Any]) -> None:
            # stored already: only marked as in use (the bytes do not travel again)
            cur = conn.execute("UPDATE foldlog.media SET touched = %s WHERE sha256 = %s", (now, sha))
            if cur.rowcount == 0:
                conn.execute(
                    "INSERT INTO foldlog.media (sha256, size, data, created, touched)"
                    " VALUES (%s, %s, %s, %s, %s)"
                    " ON CONFLICT (sha256) DO UPDATE SET touched = EXCLUDED.touched",
                    (sha, len(data), data, now, now),
                )

        self._run(f"storing media {sha}", store)
        return sha

    def get(self, sha256: str) -> bytes:
        row = self._run(
            f"reading media {sha256}",
            lambda conn: conn.execute(
                "SELECT data FROM foldlog.media WHERE sha256 = %s", (sha256,)
            ).fetchone(),
        )
        if row is None:
            raise _missing(sha256)
        return bytes(row[0])

    def hashes(self) -> set[str]:
        rows = self._run(
            "listing media", lambda conn: conn.execute("SELECT sha256 FROM foldlog.media").fetchall()
        )
        return {str(r[0]) for r in rows}

    def remove_unreferenced(self, referenced: Iterable[str], *, grace: float = DEFAULT_GRACE) -> int:
        keep = sorted(set(referenced))
        before = int((time.time() - grace) * 1000)
        count = self._run(
            "removing unreferenced media",
            lambda conn: (
                conn.execute(
                    "DELETE FROM foldlog.media WHERE touched < %s AND NOT (sha256 = ANY(%s))", (before, keep)
                ).rowcount
            ),
        )
        return int(count)

    def __repr__(self) -> str:
        return f"PostgresMediaStore({self._where})"


def media_store_for(store: object | None, log_path: Path | None = None) -> MediaStore | None:
    """The media store of a session store: the ``media`` folder of a `FileStore` (or, for a
    session file opened by its path, beside the file), the ``foldlog.media`` table of a
    `PostgresStore`; ``None`` for any other store (its sessions keep media inline)."""
    from foldlog.stores.file import FileStore

    if isinstance(store, FileStore):
        return FileMediaStore(store.root / "media")
    if store is None:
        return FileMediaStore.beside(log_path) if log_path is not None else None
    from foldlog.stores.postgres import PostgresStore

    return store.media() if isinstance(store, PostgresStore) else None


__all__ = [
    "DEFAULT_GRACE",
    "REF_PREFIX",
    "FileMediaStore",
    "MediaStore",
    "PostgresMediaStore",
    "media_store_for",
    "referenced_hashes",
    "sha256_of",
]
