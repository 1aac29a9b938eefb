"""Forks: a session that starts as another session's history up to one event, then diverges.

A fork's header names its parent (docs/log-format.md, "Forks"):
``{"kind": "fork", "id": PARENT, "atSeq": N, "log": "PARENT.jsonl"}``. A fork in a folder of
session files does not copy its parent's events: its file holds its header and its own events
only, and ``log`` names the parent's file (relative to the fork's folder). The fork's own events
continue the parent's seqs — the first is ``N + 1`` — so the history read back is one log with
no gap in its seqs, which the core reads and checks like any other: the header of the fork, the
parent's event lines ``0..N`` (read through the parent's own reference when the parent is a fork
too), then the fork's lines.

A fork into a store without files (PostgreSQL) or of a session kept in memory copies the events
up to ``N`` instead, and its header has no ``log``. The copy's media references are read where
the parent's are: a fork in memory reads its parent's media store, a fork copied into a file
gets the media it references stored beside that file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.errors import ForkError, ParentLogError

if TYPE_CHECKING:
    from foldlog.log.session import Session
    from foldlog.stores.media import MediaStore

#: the longest chain of fork references a load follows (a fork of a fork of … a session)
MAX_FORK_DEPTH = 32


def _first_line(data: bytes) -> tuple[bytes, int]:
    """The first line (without its newline) and the offset of what follows it."""
    end = data.find(b"\n")
    return (data, len(data)) if end < 0 else (data[:end], end + 1)


def fork_reference(header_line: bytes) -> dict[str, Any] | None:
    """The parent link of a header line when it is a fork that reads its parent's log (has a
    ``log``), else None. A fork link with a ``log`` but a bad ``atSeq`` is refused."""
    if b'"fork"' not in header_line or b'"log"' not in header_line:
        return None  # the cheap test first: most logs are not forks
    try:
        header = json.loads(header_line)
    except ValueError:
        return None
    parent = header.get("parent") if isinstance(header, dict) and header.get("type") == "session" else None
    if not isinstance(parent, dict) or parent.get("kind") != "fork" or "log" not in parent:
        return None
    at, log = parent.get("atSeq"), parent.get("log")
    if not isinstance(at, int) or isinstance(at, bool) or at < 0 or not isinstance(log, str) or not log:
        raise ParentLogError(
            f"fork header of session {header.get('id')!r}: a fork reference needs a non-negative "
            f"integer atSeq and a log file name (got atSeq={at!r}, log={log!r})"
        )
    return parent


def resolve_bytes(path: Path, data: bytes, _chain: tuple[Path, ...] = ()) -> tuple[bytes, int]:
    """The log a file's bytes stand for: ``data`` itself, or for a fork that refers to its
    parent's log, the fork's header + the parent's event lines up to the fork point + the fork's
    own lines. Returns the bytes and how many bytes were put in after the header (to map offsets
    in them back to the file: a torn tail is cut in the fork's file, not in the parent's)."""
    header, body = _first_line(data)
    ref = fork_reference(header.rstrip(b"\r"))
    if ref is None:
        return data, 0
    chain = (*_chain, path.resolve())
    parent_path = path.parent / ref["log"]
    shown = " -> ".join(str(p) for p in (*chain, parent_path))
    if parent_path.resolve() in chain:
        raise ParentLogError(f"{path}: the fork references loop: {shown}", parent=str(parent_path))
    if len(chain) >= MAX_FORK_DEPTH:
        raise ParentLogError(
            f"{path}: the chain of forks is deeper than {MAX_FORK_DEPTH} logs: {shown}",
            parent=str(parent_path),
        )
    try:
        parent_data = parent_path.read_bytes()
    except FileNotFoundError:
        raise ParentLogError(
            f"{path}: fork of session {ref['id']!r} at event #{ref['atSeq']}: "
            f"its parent's log {parent_path} does not exist",
            parent=str(parent_path),
        ) from None
    parent_full, _ = resolve_bytes(parent_path, parent_data, chain)
    core, _info = _native.Log.parse(parent_full, str(parent_path), allow_empty=False)
    held = (core.header or {}).get("id")
    if held != ref["id"]:
        raise ParentLogError(
            f"{path}: its parent's log {parent_path} holds session {held!r}, not {ref['id']!r}",
            parent=str(parent_path),
        )
    at = int(ref["atSeq"])
    if at >= len(core):
        raise ParentLogError(
            f"{path}: forks session {ref['id']!r} at event #{at}, but {parent_path} holds {len(core)} events",
            parent=str(parent_path),
        )
    prefix = core.event_lines(0, at + 1)
    return header + b"\n" + prefix + data[body:], len(prefix)


def read_file(path: Path) -> tuple[_native.Log, dict[str, Any]]:
    """`_native.Log.read_file`, following a fork's reference to its parent's log."""
    try:
        with open(path, "rb") as f:
            head = f.readline(1 << 16)
    except OSError:
        return _native.Log.read_file(path)  # the core's StorageError names the file and why
    if fork_reference(head.rstrip(b"\r\n")) is None:
        return _native.Log.read_file(path)
    data, _ = resolve_bytes(path, path.read_bytes())
    return _native.Log.parse(data, str(path), allow_empty=False)


def fork_link(parent_id: str, at_seq: int, log: str | None = None) -> dict[str, Any]:
    """The header's parent link of a fork (with ``log`` when it reads the parent's file)."""
    link: dict[str, Any] = {"kind": "fork", "id": parent_id, "atSeq": at_seq}
    if log is not None:
        link["log"] = log
    return link


def check_fork_point(at_seq: int | None, stored: int, source: str) -> int:
    """The fork point: ``at_seq`` (default: the last stored event), checked against ``stored``."""
    if stored == 0:
        raise ForkError(f"{source}: a session without events cannot be forked")
    if at_seq is None:
        return stored - 1
    if not isinstance(at_seq, int) or isinstance(at_seq, bool):
        raise ForkError(f"the fork point must be an event's seq (an int), not {at_seq!r}")
    if not 0 <= at_seq < stored:
        raise ForkError(f"{source}: no stored event #{at_seq} to fork at (events 0..{stored - 1})")
    return at_seq


def fork_file(
    parent_path: str | os.PathLike[str],
    at_seq: int | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    session_id: str | None = None,
) -> Session:
    """Fork the session file ``parent_path`` at ``at_seq`` (default: its last event) into
    ``path`` (default: a new id beside it), as a file that refers to the parent's log. Returns
    the fork, open for writing (its lock held; close it when done)."""
    from foldlog.log.session import Session, new_session_id

    parent_path = Path(parent_path)
    core, _ = read_file(parent_path)
    parent_id = (core.header or {}).get("id") or parent_path.stem
    at = check_fork_point(at_seq, len(core), str(parent_path))
    if path is None:
        target = parent_path.parent / f"{session_id or new_session_id()}.jsonl"
    else:
        target = Path(path)
    if target.exists():
        raise ForkError(f"{target} exists: a fork starts a new session")
    target.parent.mkdir(parents=True, exist_ok=True)
    log = os.path.relpath(parent_path.resolve(), target.parent.resolve())
    return Session.open(target, parent=fork_link(str(parent_id), at, log))


def fork_session(
    session: Session,
    at_seq: int | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    session_id: str | None = None,
) -> Session:
    """A new session whose history is ``session``'s up to and including event ``at_seq``
    (default: the last event), and which goes on by itself: its header names ``session`` and the
    fork point (docs/log-format.md, "Forks").

    A session open on a file forks into a file (``path``, default: a new id in the same folder)
    that refers to its log instead of copying it, open for writing; a session on another store
    (PostgreSQL) forks into a new session of that store holding a copy; a session in memory forks
    into memory (or into ``path``, copied). `ForkError` when there is no event ``at_seq``."""
    from foldlog.log.session import Session, header_line, new_session_id

    with session._lock:
        if session.writable:
            session.flush()
        stored = len(session.events)
        source = str(session.path or session.id)
        if session.path is not None and session.writable:
            at = check_fork_point(at_seq, stored, source)
            return fork_file(session.path, at, path, session_id=session_id)
        at = check_fork_point(at_seq, stored, source)
        lines = session._core.event_lines(0, at + 1)
        store, media = session._store, session.media
    sid = session_id or (Path(path).stem if path is not None else new_session_id())
    link = fork_link(session.id, at)
    if store is not None and path is None:
        # a store of its own (PostgreSQL): the fork's row holds a copy of the events
        writer = store.open_writer(sid, header_line(sid, None, link))
        try:
            writer.append(lines, 0, at + 1)
        finally:
            writer.close()
        return Session.open(store, sid)
    data = header_line(sid, None, link) + b"\n" + lines
    if path is None:
        fork = Session.from_bytes(data, source=sid)
        fork.media = media  # its references are the parent's (appends stay inline, in memory)
        return fork
    target = Path(path)
    if target.exists():
        raise ForkError(f"{target} exists: a fork starts a new session")
    if media is not None:
        _store_media_beside(target, lines, media)
    _native.write_file(target, data)
    return Session.open(target)


def _store_media_beside(target: Path, lines: bytes, media: MediaStore) -> None:
    """The media that ``lines`` reference, stored in the media store beside ``target`` (where
    the fork, a file, reads them) unless they are there already."""
    from foldlog.stores.media import FileMediaStore, referenced_hashes

    beside = FileMediaStore.beside(target)
    for sha in sorted(referenced_hashes(lines)):
        if not beside.path_for(sha).exists():
            beside.put(media.get(sha))


def parent_id(header: Mapping[str, Any] | None) -> str | None:
    """The id of the session a header names as its parent (a fork's, a sub-agent's), or None."""
    parent = header.get("parent") if header else None
    if isinstance(parent, Mapping) and isinstance(parent.get("id"), str) and parent["id"]:
        return str(parent["id"])
    return None
