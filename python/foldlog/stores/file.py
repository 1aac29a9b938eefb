"""The JSONL file store: one file per session, ``<root>/<session-id>.jsonl``, header first.

The writer (lock, batched fsynced appends, the check that the file is what the writer left) is
in the Rust core; this module adapts it to the store contract of `foldlog.stores.base`.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from foldlog import _core
from foldlog.errors import StorageError
from foldlog.log.grammar.kinds import TURN_START, USER_MESSAGE
from foldlog.stores.base import SessionInfo, StoreWriterBase, check_batch, check_header, check_session_id
from foldlog.stores.file_rewrite import erased_file_bytes


def _type_is(kind: str) -> re.Pattern[bytes]:
    """The bytes of an event line of type ``kind`` (listing reads lines without parsing them)."""
    return re.compile(rb'"type"\s*:\s*"' + re.escape(kind.encode()) + rb'"')


_TURN = _type_is(TURN_START)
_USER = _type_is(USER_MESSAGE)
_SEQ = re.compile(rb'"seq"\s*:\s*(\d+)')


def private_folder(path: Path) -> None:
    """Create ``path`` and any missing parents as 0700 folders (session logs and archives hold
    conversations). Folders that exist already keep their mode: they belong to the user."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for p in reversed(missing):
        try:
            p.mkdir(mode=0o700)
        except FileExistsError:
            continue
        except OSError as e:
            err = StorageError(f"cannot create the folder {p}: {e.strerror or e}")
            err.errno = e.errno
            raise err from e
        # the umask only takes bits away: give the owner back any it took (a umask of 0o277
        # would leave a folder even its owner cannot write)
        os.chmod(p, 0o700)


def _last_seq(data: bytes) -> int:
    """Seq of the last complete event line (-1 when there is none)."""
    end = len(data)
    while end > 0:
        start = data.rfind(b"\n", 0, end - 1) + 1
        line = data[start:end].strip()
        end = start
        if not line or not line.endswith(b"}"):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if isinstance(ev, dict) and ev.get("type") != "session" and isinstance(ev.get("seq"), int):
            return int(ev["seq"])
        if isinstance(ev, dict) and ev.get("type") == "session":
            return _fork_base(ev)
    return -1


def _fork_base(header: dict[str, object]) -> int:
    """Seq of the last event a header's own file does not hold: a fork that reads its parent's
    log continues the parent's seqs after the fork point (docs/log-format.md, "Forks")."""
    parent = header.get("parent")
    if isinstance(parent, dict) and parent.get("kind") == "fork" and "log" in parent:
        at = parent.get("atSeq")
        if isinstance(at, int) and not isinstance(at, bool) and at >= 0:
            return at
    return -1


class FileStoreWriter(StoreWriterBase):
    """The single writer of one session file. Holds ``<file>.lock`` until closed."""

    path: Path  # always a file

    def __init__(self, path: str | os.PathLike[str], header_line: bytes, *, durable: bool = True) -> None:
        self.path = Path(path)
        header = check_header(self.path.stem, header_line)
        self._core, opened = _core.FileWriter.open(self.path, header.decode(), durable)
        self._opened: bytes | None = opened
        self._next_seq: int | None = None

    def read_log(self) -> bytes:
        """The stored log, read under the writer's lock (the first call after creating the file
        reuses the header it wrote). Opening reads nothing: a session opened from its checkpoint
        reads only the tail after it (`foldlog.log.checkpoint.read_for_writer`)."""
        if self._opened is not None:
            data, self._opened = self._opened, None
            return data
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            raise StorageError(f"session file {self.path} was deleted under its writer") from None

    def cut_tail(self, valid_len: int, add_newline: bool) -> None:
        """Cut a torn last line found on open (and end the last good line with a newline)."""
        self._core.cut_to(valid_len, add_newline)

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        """Store one batch durably; it must continue the stored log (`StorageError` otherwise)."""
        check_batch(lines, first_seq, count)
        if self._next_seq is None:
            self._next_seq = _last_seq(self.read_log()) + 1
        if first_seq != self._next_seq:
            raise StorageError(
                f"session file {self.path}: batch starts at seq {first_seq}, "
                f"but the stored log continues at {self._next_seq}"
            )
        self._core.append(lines)
        self._next_seq = first_seq + count

    def append_from(self, log: _core.Log) -> int:
        """Flush the log's pending batch straight from the core (no copy through Python). The
        core checks the file is exactly what this writer left, which implies seq continuity."""
        n = self._core.append_from(log)
        self._next_seq = None
        return n

    def erase(self, tombstones: Mapping[int, bytes], erasure: bytes, erasure_seq: int) -> int:
        """Rewrite the file with the erased events' tombstones and the erasure event, atomically
        and under the lock (`foldlog.stores.file_rewrite`: the only rewrite the log allows), then
        remove the media only they referenced (`foldlog.stores.media_erase`); returns how many."""
        from foldlog.stores.media_erase import candidates, remove_from_folder

        data = self.read_log()
        base = _fork_base(json.loads(data.split(b"\n", 1)[0] or b"null") or {})
        new = erased_file_bytes(data, base, tombstones, erasure, erasure_seq, str(self.path))
        self._core.rewrite(new)
        self._next_seq = None
        # the rewritten file's mtime: "the erasure began" on the clock the media files' mtimes use
        return remove_from_folder(self.path.parent, candidates(data, new), self.path.stat().st_mtime)

    def suspend(self) -> None:
        """Close the session file but keep the lock (an idle, released session); the next write
        opens it again, after checking it is what this writer left."""
        self._core.suspend()

    def close(self) -> None:
        self._core.close()

    @property
    def closed(self) -> bool:
        return self._core.closed


class FileStore:
    """Sessions as JSONL files in ``root``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def path_for(self, session_id: str) -> Path:
        return self.root / f"{check_session_id(session_id)}.jsonl"

    def read_log(self, session_id: str) -> bytes:
        path = self.path_for(session_id)
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise StorageError(f"no session {session_id!r} in {self.root}") from None

    def open_writer(self, session_id: str, header_line: bytes, *, durable: bool = True) -> FileStoreWriter:
        private_folder(self.root)
        return FileStoreWriter(self.path_for(session_id), header_line, durable=durable)

    def session_paths(self) -> list[Path]:
        """The log file of every session in the folder, sorted by name (nothing is read)."""
        if not self.root.is_dir():
            return []
        return sorted(self.root.glob("*.jsonl"))

    def list_sessions(self) -> list[SessionInfo]:
        """Every session in the folder, most recently updated first. Quick with many large logs:
        it reads each file's bytes once and decodes only its header and first user message."""
        out = []
        for p in self.session_paths():
            try:
                out.append(describe(p))
            except OSError:
                continue  # removed while we looked
        out.sort(key=lambda s: s.updated, reverse=True)
        return out

    def __repr__(self) -> str:
        return f"FileStore({str(self.root)!r})"


def holder_of(path: Path) -> str | None:
    """Who holds the session's writer lock now (``pid N@host``), or None when nobody does."""
    lock = path.with_suffix(".lock")
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.read(fd, 4096).decode(errors="replace").strip() or "another process"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def preview_of(data: bytes, limit: int = 72) -> str | None:
    """The start of the first user message of a log's bytes (for listings), or None: its text as
    the core reads it (a string, or its text blocks joined by newlines; the PostgreSQL store's
    ``foldlog.content_text`` keeps the same rule)."""
    for line in data.splitlines():
        if not _USER.search(line):
            continue
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        message = ev.get("data") if isinstance(ev, dict) else None
        if not isinstance(message, dict):
            continue
        text = " ".join(_core.message_text(message).split())
        if text:
            return text if len(text) <= limit else text[: limit - 1] + "…"
    return None


def describe(path: Path) -> SessionInfo:
    """One session file as a listing row."""
    stat = path.stat()
    data = path.read_bytes()
    session_id, created = path.stem, int(stat.st_mtime * 1000)
    first = data.split(b"\n", 1)[0]
    parent: str | None = None
    kind: str | None = None
    try:
        header = json.loads(first)
        if isinstance(header, dict) and header.get("type") == "session":
            session_id = str(header.get("id") or session_id)
            created = int(header.get("createdAt") or created)
            link = header.get("parent")
            if isinstance(link, dict) and isinstance(link.get("id"), str):
                parent = link["id"]
                kind = link["kind"] if isinstance(link.get("kind"), str) else None
    except ValueError:
        pass
    return SessionInfo(
        id=session_id,
        created=created,
        updated=int(stat.st_mtime * 1000),
        last_seq=_last_seq(data),
        size=stat.st_size,
        turns=len(_TURN.findall(data)),
        holder=holder_of(path),
        preview=preview_of(data),
        path=str(path),
        parent=parent,
        parent_kind=kind,
    )
