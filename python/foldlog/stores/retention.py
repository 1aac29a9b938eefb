"""Retention: remove the sessions nobody used for a while, with everything they own.

``prune(store, older_than=timedelta(days=30), keep_last=10)`` works on a `FileStore` or a
`PostgresStore` (``foldlog sessions prune`` is its command). The rules (docs/retention.md,
"Retention"):

- **Last use** is the store's time of the last append: the file's mtime, PostgreSQL's
  ``sessions.updated`` (what ``foldlog sessions`` shows as "last used"). Not the last event's
  ``time``: an imported transcript keeps the times of its original events, and a session
  imported today must not look years old; and it costs a ``stat``, not a read of every log.
- **Families.** A sub-agent's session belongs to its parent: it goes only with it, and a recent
  one keeps its parent. A fork goes with its parent too; a fork that is old while its parent is
  kept goes alone; a fork that is recent (or written now) keeps its parent and every ancestor —
  a fork reads its parent's log, so the parent must stay. Prune never refuses because of a
  family: it keeps, and the report says which sessions were kept and why.
- A session whose writer lock is held (a live writer, a released session in a host) is never
  removed, and neither are its ancestors. Each removal takes the session's writer lock first
  and checks that the session was not used since it was listed.
- ``keep_last=N`` keeps the N most recently used top-level sessions, each with its whole family.
- Descendants are removed before their parents, so a prune that stops half-way never leaves a
  fork without the log it reads.
"""

from __future__ import annotations

import fcntl
import glob
import os
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from foldlog.errors import FoldlogError, StorageError
from foldlog.stores.base import SessionInfo, SessionStore

if TYPE_CHECKING:
    from foldlog.stores.file import FileStore
    from foldlog.stores.postgres import PostgresStore

__all__ = [
    "InvalidDurationError",
    "KeptSession",
    "PruneReport",
    "RetentionError",
    "parse_duration",
    "plan_prune",
    "prune",
    "referenced_media",
    "remove_unreferenced_media",
]

#: why an old session stays
LOCKED = "a live writer holds it"
FAMILY = "a recent or live fork or sub-agent session needs it"
WITH_PARENT = "a sub-agent session stays with its parent"
KEEP_LAST = "one of the --keep-last most recent"
USED_NOW = "used again during the prune"

#: progress callback: (sessions done, sessions to remove, the id just handled)
Progress = Callable[[int, int, str], None]


class RetentionError(FoldlogError, ValueError):
    """A prune asked for with values it cannot use."""


class InvalidDurationError(RetentionError):
    """A retention duration that is not a number with a unit (``30d``, ``12h``, ``90m``)."""


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PART = re.compile(r"(\d+)([smhdw])")


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``45s``, ``2w`` or a sum of them (``1d12h``) as a timedelta."""
    cleaned = text.strip().lower() if isinstance(text, str) else ""
    parts = _PART.findall(cleaned)
    if not cleaned or "".join(n + u for n, u in parts) != cleaned:
        raise InvalidDurationError(
            f"invalid duration {text!r}: use a whole number and a unit, s, m, h, d or w (30d, 12h, 90m)"
        )
    seconds = sum(int(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise InvalidDurationError(f"invalid duration {text!r}: it must be longer than zero")
    return timedelta(seconds=seconds)


@dataclass(frozen=True, slots=True)
class KeptSession:
    """An old session that stays, and why."""

    id: str
    reason: str


@dataclass(slots=True)
class PruneReport:
    """What a prune removed (or, with ``dry_run``, would remove) and what it kept."""

    #: sessions unused since this time (epoch ms) were candidates
    cutoff: int
    dry_run: bool
    #: the sessions removed (would be removed), descendants before their parents
    removed: list[SessionInfo] = field(default_factory=list)
    #: old sessions that stay, with the reason
    kept: list[KeptSession] = field(default_factory=list)
    #: media blobs no session references any more, removed (0 on a dry run)
    media_removed: int = 0

    @property
    def freed_bytes(self) -> int:
        """Bytes of the removed logs."""
        return sum(s.size for s in self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff / 1000,
            "dry_run": self.dry_run,
            "removed": [{"id": s.id, "size": s.size, "last_used": s.updated / 1000} for s in self.removed],
            "kept": [{"id": k.id, "reason": k.reason} for k in self.kept],
            "freed_bytes": self.freed_bytes,
            "media_removed": self.media_removed,
        }


# --- the plan: which sessions go ----------------------------------------------------------------


def plan_prune(
    infos: Iterable[SessionInfo], cutoff_ms: int, keep_last: int = 0
) -> tuple[list[SessionInfo], list[KeptSession]]:
    """The sessions to remove (descendants before parents) and the old ones kept, with why.
    Pure: it reads only the listing."""
    by_id: dict[str, SessionInfo] = {}
    for info in infos:
        by_id.setdefault(info.id, info)  # two files with one id: the newest listed (first) counts
    children: dict[str, list[str]] = {}
    for info in by_id.values():
        if info.parent is not None and info.parent in by_id and info.parent != info.id:
            children.setdefault(info.parent, []).append(info.id)

    def parent_of(sid: str) -> str | None:
        p = by_id[sid].parent
        return p if p is not None and p in by_id and p != sid else None

    roots = [sid for sid in by_id if parent_of(sid) is None]
    order = _post_order(roots, children)
    in_tree = set(order)
    cyclic = [sid for sid in by_id if sid not in in_tree]  # a loop of parent links has no root

    # newest use of each subtree, then keep-last protects whole top-level families
    newest: dict[str, int] = {}
    for sid in order:
        newest[sid] = max([by_id[sid].updated, *(newest[c] for c in children.get(sid, []))])
    protected: set[str] = set()
    for root in sorted(roots, key=lambda r: newest[r], reverse=True)[: max(keep_last, 0)]:
        protected.update(_post_order([root], children))

    def old(sid: str) -> bool:
        return by_id[sid].updated < cutoff_ms

    # a subtree may go when every member is old, unprotected and not being written
    removable: dict[str, bool] = {}
    for sid in order:
        info = by_id[sid]
        removable[sid] = (
            old(sid)
            and info.holder is None
            and sid not in protected
            and all(removable[c] for c in children.get(sid, []))
        )
    goes: dict[str, bool] = {}
    for sid in reversed(order):  # parents before children
        parent = parent_of(sid)
        bound = parent is not None and by_id[sid].parent_kind != "fork"
        goes[sid] = removable[sid] and (not bound or goes[parent or ""])

    removed = [by_id[sid] for sid in order if goes[sid]]
    kept: list[KeptSession] = []
    for sid in [*order, *cyclic]:
        if goes.get(sid) or not old(sid):
            continue
        info = by_id[sid]
        if info.holder is not None:
            reason = LOCKED
        elif sid in protected:
            reason = KEEP_LAST
        elif removable.get(sid):
            reason = WITH_PARENT
        else:
            reason = FAMILY
        kept.append(KeptSession(sid, reason))
    return removed, kept


def _post_order(roots: list[str], children: dict[str, list[str]]) -> list[str]:
    """Every session under ``roots``, each after all of its descendants (iterative: deep trees)."""
    out: list[str] = []
    seen: set[str] = set()
    for root in roots:
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:
            sid, expanded = stack.pop()
            if expanded:
                out.append(sid)
                continue
            if sid in seen:
                continue
            seen.add(sid)
            stack.append((sid, True))
            stack.extend((c, False) for c in children.get(sid, []))
    return out


# --- doing it -------------------------------------------------------------------------------------


def prune(
    store: SessionStore,
    older_than: timedelta,
    keep_last: int = 0,
    *,
    dry_run: bool = False,
    progress: Progress | None = None,
    now: float | None = None,
) -> PruneReport:
    """Remove the sessions of ``store`` (a `FileStore` or a `PostgresStore`) not used for
    ``older_than``, under the rules of this module's docstring. ``dry_run`` lists what would go
    and changes nothing. ``progress(done, total, id)`` is called after each removal."""
    if older_than <= timedelta(0):
        raise InvalidDurationError(f"older_than must be longer than zero, got {older_than}")
    if keep_last < 0:
        raise RetentionError(f"keep_last must be >= 0, got {keep_last}")
    _store_kind(store)  # an unknown store is refused before anything is listed
    cutoff = int(((time.time() if now is None else now) - older_than.total_seconds()) * 1000)
    removed, kept = plan_prune(store.list_sessions(), cutoff, keep_last)
    report = PruneReport(cutoff=cutoff, dry_run=dry_run, kept=kept)
    if dry_run:
        report.removed = removed
        return report
    stays: set[str] = set()  # sessions found in use now: their ancestors stay too
    remover = _remover_for(store)
    try:
        for done, info in enumerate(removed, 1):
            if info.id in stays or not remover.remove(info):
                report.kept.append(KeptSession(info.id, USED_NOW if info.id not in stays else FAMILY))
                stays.update(_ancestors(info, removed))
            else:
                report.removed.append(info)
            if progress is not None:
                progress(done, len(removed), info.id)
    finally:
        remover.close()
    report.media_removed = remove_unreferenced_media(store)
    return report


def _ancestors(info: SessionInfo, listed: list[SessionInfo]) -> set[str]:
    by_id = {s.id: s for s in listed}
    out: set[str] = set()
    parent = info.parent
    while parent is not None and parent not in out:
        out.add(parent)
        nxt = by_id.get(parent)
        parent = nxt.parent if nxt is not None else None
    return out


def remove_unreferenced_media(store: SessionStore) -> int:
    """Remove the media blobs that no session of ``store`` references any more; returns how many.
    Runs after a prune has removed sessions (never on a dry run). Media stored within the media
    store's grace period stays: a session appending an event that references it right now has
    stored the bytes first and flushes the event a moment later."""
    from foldlog.stores.media import media_store_for

    media = media_store_for(store)
    if media is None or not media.hashes():
        return 0  # nothing stored: no log needs reading
    return media.remove_unreferenced(referenced_media(store))


def referenced_media(store: SessionStore) -> set[str]:
    """The hashes of the media any session of ``store`` references (retention's and an erasure's
    scan: `foldlog.stores.media_erase`). `StorageError` when a listed log cannot be read: its
    media must not be judged unreferenced."""
    from foldlog.stores.media import referenced_hashes

    referenced: set[str] = set()
    for info in store.list_sessions():
        try:
            referenced |= referenced_hashes(store.read_log(info.id))
        except StorageError:
            if info.id in {s.id for s in store.list_sessions()}:
                raise  # not removed meanwhile: unreadable
    return referenced


class _Remover(ABC):
    """Removes one listed session under its writer lock, if it was not used since listed."""

    @abstractmethod
    def remove(self, info: SessionInfo) -> bool: ...

    def close(self) -> None:
        return None


def _store_kind(store: SessionStore) -> str:
    """``"file"`` or ``"postgres"``; `StorageError` for a store prune does not know."""
    from foldlog.stores.file import FileStore

    if isinstance(store, FileStore):
        return "file"
    if type(store).__name__ == "PostgresStore":  # not imported here: the driver stays optional
        return "postgres"
    raise StorageError(f"prune works on a FileStore or a PostgresStore, not {type(store).__name__}")


def _remover_for(store: SessionStore) -> _Remover:
    if _store_kind(store) == "file":
        return _FileRemover(cast("FileStore", store))
    return _PostgresRemover(cast("PostgresStore", store))


class _FileRemover(_Remover):
    def __init__(self, store: FileStore) -> None:
        self.store = store

    def remove(self, info: SessionInfo) -> bool:
        path = Path(info.path) if info.path else self.store.path_for(info.id)
        lock_path = path.with_suffix(".lock")
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as e:
            raise StorageError(f"cannot open the lock file {lock_path}: {e.strerror or e}") from e
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False  # a writer opened it since the listing
            try:
                mtime = int(path.stat().st_mtime * 1000)
            except FileNotFoundError:
                return True  # removed by someone else meanwhile: gone all the same
            if mtime != info.updated:
                return False
            for extra in _sidecars(path):
                extra.unlink(missing_ok=True)
            path.unlink(missing_ok=True)
            lock_path.unlink(missing_ok=True)  # still holding it: no writer starts in between
            return True
        finally:
            os.close(fd)


def _sidecars(path: Path) -> list[Path]:
    """The files a session keeps beside its log (``<id>.jsonl.<something>``: a checkpoint, a torn
    rewrite's temporary file), never another session's log or lock (``a.jsonl.b.jsonl`` is the
    log of session ``a.jsonl.b``)."""
    return [
        p for p in path.parent.glob(glob.escape(path.name) + ".*") if not p.name.endswith((".jsonl", ".lock"))
    ]


class _PostgresRemover(_Remover):
    """One connection for the whole prune; each session is deleted in its own transaction while
    this connection holds its advisory writer lock (its events go by ``ON DELETE CASCADE``)."""

    def __init__(self, store: PostgresStore) -> None:
        from foldlog.stores.postgres import _connect

        self.conn = _connect(store.dsn, application_name="foldlog prune")

    def remove(self, info: SessionInfo) -> bool:
        row = self.conn.execute("SELECT pg_try_advisory_lock(foldlog.lock_key(%s))", (info.id,)).fetchone()
        if not row or not row[0]:
            return False
        try:
            cur = self.conn.execute(
                "DELETE FROM foldlog.sessions WHERE id = %s AND updated = %s", (info.id, info.updated)
            )
            if cur.rowcount == 1:
                return True
            # not there any more (gone all the same), or used since it was listed
            return (
                self.conn.execute("SELECT 1 FROM foldlog.sessions WHERE id = %s", (info.id,)).fetchone()
                is None
            )
        finally:
            self.conn.execute("SELECT pg_advisory_unlock(foldlog.lock_key(%s))", (info.id,))

    def close(self) -> None:
        self.conn.close()
