"""The JSONL file store: one file per session, ``<root>/<session-id>.jsonl``, header first.

The writer (lock, batched fsynced appends, the check that the file is what the writer left) is
in the Rust core; this module only adapts it to the store protocol.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from foldlog import _core
from foldlog.errors import StorageError

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")


def check_session_id(session_id: str) -> str:
    """Session ids become file names: refuse anything that could escape the folder."""
    if not isinstance(session_id, str) or not _ID.match(session_id) or ".." in session_id:
        raise ValueError(
            f"invalid session id {session_id!r}: use letters, digits, '.', '_' or '-' (at most 200)"
        )
    return session_id


class FileStoreWriter:
    """The single writer of one session file. Holds ``<file>.lock`` until closed."""

    def __init__(self, path: str | os.PathLike[str], header_line: bytes, *, durable: bool = True) -> None:
        self.path = Path(path)
        self._core, self._bytes = _core.FileWriter.open(self.path, header_line.decode(), durable)

    def read_log(self) -> bytes:
        """The file's bytes as found when the writer opened it (read under the lock)."""
        return self._bytes

    def cut_tail(self, valid_len: int, add_newline: bool) -> None:
        """Cut a torn last line found on open (and end the last good line with a newline)."""
        self._core.cut_to(valid_len, add_newline)

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        self._core.append(lines)

    def append_from(self, log: _core.Log) -> int:
        """Flush the log's pending batch straight from the core (no copy through Python)."""
        return log.flush_to(self._core)

    def close(self) -> None:
        self._core.close()

    @property
    def closed(self) -> bool:
        return self._core.closed


@dataclass(frozen=True)
class SessionFile:
    id: str
    path: Path
    size: int
    modified: float


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
        if not self.root.exists():
            self.root.mkdir(parents=True, mode=0o700, exist_ok=True)
        return FileStoreWriter(self.path_for(session_id), header_line, durable=durable)

    def list_sessions(self) -> list[SessionFile]:
        """Sessions in the folder, newest first."""
        if not self.root.is_dir():
            return []
        out = []
        for p in self.root.glob("*.jsonl"):
            st = p.stat()
            out.append(SessionFile(p.stem, p, st.st_size, st.st_mtime))
        out.sort(key=lambda s: s.modified, reverse=True)
        return out

    def __repr__(self) -> str:
        return f"FileStore({str(self.root)!r})"
