"""The session store contract: where a session's JSONL log lives.

A store keeps, per session, a header line and the event lines in seq order, exactly as the
writer produced them (bytes in, the same bytes out). ``Session.open(store, id)`` takes the
single-writer lock through :meth:`SessionStore.open_writer` and then only appends batches.

Two implementations ship: ``FileStore`` (one ``<id>.jsonl`` per session, the embedded default)
and ``PostgresStore`` (many hosts, one database). Both pass the same contract tests
(``tests/stores/test_contract.py``).

Errors (all from :mod:`foldlog.errors`):

- a session that does not exist: :class:`StorageError` naming it (``read_log``);
- another writer holds the session: :class:`SessionLockedError` whose ``holder`` names it;
- a batch that does not continue the stored log (``first_seq != last_seq + 1``), a lost
  connection or a failed write: :class:`StorageError` — nothing of that batch is stored;
- a malformed batch (not newline-terminated lines, ``count`` not the number of lines):
  :class:`InvalidEventError`, raised before anything is written.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from foldlog import _core
from foldlog.errors import InvalidEventError, StorageError

if TYPE_CHECKING:
    from foldlog._core import Log


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One row of :meth:`SessionStore.list_sessions`."""

    id: str
    #: creation time, epoch milliseconds (the header's ``createdAt`` when it has one)
    created: int
    #: time of the last append (or of creation), epoch milliseconds
    updated: int
    #: seq of the last stored event; -1 while the session has only its header
    last_seq: int
    #: bytes of the whole log as ``read_log`` returns it (header and newlines included)
    size: int
    #: number of turns started (``turn/start`` events)
    turns: int
    #: the writer holding the session now (``pid@host``, plus the database backend), or None
    holder: str | None
    #: the start of the first user message, for listings; None before there is one
    preview: str | None
    #: the file that holds the log (file stores); None for a database
    path: str | None = None
    #: the session the header names as this one's parent (a fork's, a sub-agent's), or None
    parent: str | None = None
    #: how it comes from its parent: ``"fork"``, ``"subagent"`` (the header's ``parent.kind``)
    parent_kind: str | None = None


@runtime_checkable
class StoreWriter(Protocol):
    """The single writer of one session; obtained from :meth:`SessionStore.open_writer`."""

    def read_log(self) -> bytes:
        """The stored log (header line + one event per line), read under the writer's lock."""
        ...

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        """Durably store one batch of ``count`` JSONL lines (each ending in ``\\n``) whose first
        event has seq ``first_seq``, in one transaction: all lines or none. Raises
        :class:`StorageError` when ``first_seq`` does not continue the stored log."""
        ...

    def close(self) -> None:
        """Release the lock. Idempotent."""
        ...


class StoreWriterBase(ABC):
    """A `StoreWriter` with its optional abilities declared, each with its default (what a
    writer that implements only `StoreWriter` gets through `declared_writer`). The file and the
    PostgreSQL writers inherit it and override what they do better; `Session` reaches its store
    only through these members."""

    #: the file that holds the log, for a writer of one (a released session reads it back with
    #: its fork's parent); ``None``: the log is read back through `read_log`
    path: Path | None = None

    @abstractmethod
    def read_log(self) -> bytes: ...

    @abstractmethod
    def append(self, lines: bytes, first_seq: int, count: int) -> None: ...

    @abstractmethod
    def close(self) -> None: ...

    def append_from(self, log: Log) -> int:
        """Store ``log``'s pending batch and mark it flushed; returns the events stored. The
        default copies the batch out of the core and calls `append` (the file writer has the
        core write it directly)."""
        data, first, count = _core.pending_batch(log)
        if count:
            self.append(data, first, count)
            _core.mark_flushed(log, first + count)
        return count

    def cut_tail(self, valid_len: int, add_newline: bool) -> None:
        """Cut a torn last line found on open, at ``valid_len`` bytes of `read_log`'s log (and
        end the last good line with a newline). The default cannot: `StorageError` (a store that
        writes whole lines in one transaction never leaves a torn one)."""
        raise StorageError("the stored log has a torn tail the store cannot cut")

    def erase(self, tombstones: Mapping[int, bytes], erasure: bytes, erasure_seq: int) -> int:
        """Store an erasure in one step (docs/log-format.md, "Erasure"): the stored lines of the
        seqs in ``tombstones`` replaced by theirs (each without its newline), and ``erasure``, the
        erasure event's line (with its newline, seq ``erasure_seq``), appended: all or nothing,
        and the erased bytes gone from the store, with the media only those lines referenced;
        returns how many media blobs were removed. The default cannot: `StorageError`."""
        raise StorageError(f"{type(self).__name__} cannot erase events: it only appends")

    def suspend(self) -> None:
        """Let go of what an idle (released) session need not hold, keeping the lock; the next
        write takes it up again. The default holds nothing to let go of."""
        return None

    # A store that keeps a session's checkpoint itself (`foldlog.log.checkpoint`: a file
    # writer's is a file beside its log, written through `path`) declares these three.

    def store_checkpoint(self, data: bytes, events: int) -> bool:
        """Keep ``data``, the checkpoint of the stored log's first ``events`` events (all of it,
        just flushed), in place of the one kept before; returns whether it was kept. The default
        keeps none."""
        return False

    def read_checkpoint(self) -> tuple[bytes, bytes] | None:
        """The kept checkpoint and the stored lines from the last event it covers on (its check,
        then the tail), or ``None`` when there is none (the default)."""
        return None

    def read_prefix(self, events: int) -> bytes:
        """The header and the first ``events`` events of the stored log, as JSONL: what completes
        a log restored from `read_checkpoint`'s checkpoint. The default reads the whole log and
        cuts it."""
        data = self.read_log()
        lines = data.split(b"\n", events + 1)
        return b"\n".join(lines[: events + 1]) + b"\n"


class _ProtocolWriter(StoreWriterBase):
    """A writer that implements only `StoreWriter`, with the declared defaults."""

    def __init__(self, writer: StoreWriter) -> None:
        self._writer = writer

    def read_log(self) -> bytes:
        return self._writer.read_log()

    def append(self, lines: bytes, first_seq: int, count: int) -> None:
        self._writer.append(lines, first_seq, count)

    def close(self) -> None:
        self._writer.close()

    def __repr__(self) -> str:
        return repr(self._writer)


def declared_writer(writer: StoreWriter) -> StoreWriterBase:
    """``writer`` with its optional abilities declared: itself when it inherits
    `StoreWriterBase`, else wrapped with the defaults (a store of your own whose writer
    implements only `StoreWriter`)."""
    return writer if isinstance(writer, StoreWriterBase) else _ProtocolWriter(writer)


class WriterSource(Protocol):
    """What `Session.open` needs of a store: the writer of a session."""

    def open_writer(self, session_id: str, header_line: bytes) -> StoreWriter:
        """Take the session's single-writer lock at once, or raise :class:`SessionLockedError`
        naming the holder. Creates the session with ``header_line`` (the header JSON as one
        line, without its newline) when it does not exist; an existing session keeps its own."""
        ...


@runtime_checkable
class SessionStore(WriterSource, Protocol):
    """Where session logs live."""

    def read_log(self, session_id: str) -> bytes:
        """The whole log as JSONL bytes: header line, then one event per line (each ends in ``\\n``)."""
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Every session in the store, most recently updated first."""
        ...


def check_batch(lines: bytes, first_seq: int, count: int) -> None:
    """Validate the shape of an append batch before anything is written (shared by the stores)."""
    if first_seq < 0:
        raise InvalidEventError(f"append: first_seq must be >= 0, got {first_seq}")
    if count <= 0:
        raise InvalidEventError(f"append: count must be >= 1, got {count}")
    if not lines.endswith(b"\n"):
        raise InvalidEventError("append: the batch must be JSONL lines, each ending in a newline")
    found = lines.count(b"\n")
    if found != count:
        raise InvalidEventError(f"append: count says {count} lines but the batch holds {found}")
    if b"\n\n" in lines or lines.startswith(b"\n"):
        raise InvalidEventError("append: the batch contains an empty line")


_SESSION_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def check_session_id(session_id: str) -> str:
    """A session id every store can keep — and a file name that stays in its folder, so that a
    session moves between stores as it is: 1 to 200 letters, digits, ``.``, ``_`` or ``-``,
    starting with a letter or a digit, without ``..``. Raises `InvalidEventError` otherwise."""
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id) or ".." in session_id:
        raise InvalidEventError(
            f"invalid session id {session_id!r}: use 1 to 200 letters, digits, '.', '_' or '-', "
            "starting with a letter or a digit"
        )
    return session_id


def safe_session_id(text: str) -> str:
    """A session id made from any text (a transcript's own id, a file name): the characters
    `check_session_id` refuses become ``-``; never empty."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return cleaned[:120] or "session"


def check_header(session_id: str, header_line: bytes) -> bytes:
    """Validate a header line and return it without its trailing newline."""
    check_session_id(session_id)
    header = header_line[:-1] if header_line.endswith(b"\n") else header_line
    if not header.strip():
        raise InvalidEventError(f"session {session_id!r}: the header line is empty")
    if b"\n" in header:
        raise InvalidEventError(f"session {session_id!r}: the header must be a single line")
    return header


__all__ = [
    "SessionInfo",
    "SessionStore",
    "StoreWriter",
    "StoreWriterBase",
    "WriterSource",
    "check_batch",
    "check_header",
    "check_session_id",
    "declared_writer",
]
