"""Checkpoints: a long session opens to ready in what its tail costs, not its length.

A checkpoint (``<session>.jsonl.ckpt`` beside the log) holds what loading the log computes — the
surface, the turn and compaction tracking, the events the surface reads — with the byte length
it covers and a check of those bytes (the core: `foldlog_core::log::checkpoint`). It is written
when a file-backed session is released and at the flush after a compaction; opening reads the
checkpoint, checks it against the log, and parses only the events stored after it. The log
opened so is *partial*: deriving, counting, planning, request bodies and appending use what it
holds; anything that reads the whole log (its events, its bytes, its stats, a fork) reads the
rest first, once. A checkpoint that does not match its log (edited, truncated, rewritten,
another version, corrupt) is ignored with a `CheckpointIgnoredWarning` and the whole log is
loaded. A checkpoint is a cache: failing to write one never fails the session
(docs/retention.md, "Checkpoints").

A store whose writer keeps checkpoints itself (`StoreWriterBase.store_checkpoint`: the
PostgreSQL store's ``foldlog.checkpoints``) gets the core's rows checkpoint, checked against the
stored line of the last event it covers; a log restored from it reads the rest of its rows from
the store when it is completed (`StoreWriterBase.read_prefix`).
"""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.errors import CheckpointIgnoredWarning, FoldlogError

if TYPE_CHECKING:
    from foldlog.stores.base import StoreWriterBase

log = logging.getLogger("foldlog.checkpoint")

SUFFIX = ".ckpt"
#: logs shorter than this load whole in a few milliseconds: no checkpoint is written for them
MIN_EVENTS = 2_000


def checkpoint_path(log_path: Path) -> Path:
    """Where the checkpoint of the log at ``log_path`` is kept: beside it, ``.ckpt`` added."""
    return log_path.with_name(log_path.name + SUFFIX)


def restore(log_path: Path, *, stacklevel: int = 3) -> tuple[_native.Log, dict[str, Any]] | None:
    """The log at ``log_path`` restored from its checkpoint, with the events stored after it, as
    ``(log, info)`` like `_native.Log.read_file`'s; ``None`` when there is no checkpoint or it is
    not used (a warning when it does not match the log; a tail the checkpoint cannot read alone —
    a torn or invalid last line — is left to the full load, which reports it)."""
    ckpt = checkpoint_path(log_path)
    try:
        data = ckpt.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.warn(
            CheckpointIgnoredWarning(f"{ckpt}: cannot read it ({exc}); loading the whole log"),
            stacklevel=stacklevel,
        )
        return None
    core, _tail, warn, reason = _native.checkpoint_restore(data, log_path)
    if core is None:
        if warn:
            warnings.warn(
                CheckpointIgnoredWarning(f"{ckpt}: {reason}; loading the whole log"), stacklevel=stacklevel
            )
        return None
    size = log_path.stat().st_size
    return core, {"torn": None, "valid_len": size, "missing_newline": False}


def read_for_writer(
    writer: StoreWriterBase, path: Path | None, source: str
) -> tuple[_native.Log, dict[str, Any], int]:
    """The stored log ``writer`` continues, as ``(log, info, shift)``: ``info`` as `restore` and
    `_native.Log.parse` give it, ``shift`` what maps its offsets back to the file (see
    `foldlog.log.forks.resolve_bytes`). A file log with a checkpoint that matches it reads only the
    events after the checkpoint, never the whole file (its tail torn or without its newline: the
    checkpoint is not used, and the whole log is read and parsed, which reports it); any other
    log is read whole under the writer's lock, a fork with its parent's events."""
    restored = (
        restore(path, stacklevel=4) if path is not None else restore_stored(writer, source, stacklevel=4)
    )
    if restored is not None:
        return (*restored, 0)
    data, shift = writer.read_log(), 0
    if path is not None:
        from foldlog.log.forks import resolve_bytes

        data, shift = resolve_bytes(path, data)  # a fork reads its parent's log too
    core, info = _native.Log.parse(data, source)
    return core, info, shift


def restore_stored(
    writer: StoreWriterBase, source: str, *, stacklevel: int = 3
) -> tuple[_native.Log, dict[str, Any]] | None:
    """The log ``writer`` continues, restored from the checkpoint its store keeps (with the rows
    stored after it), as `restore`; ``None`` when its store keeps none for it or it is not used
    (a warning when it does not match the stored rows)."""
    kept = writer.read_checkpoint()
    if kept is None:
        return None
    data, stored = kept
    core, _tail, warn, reason = _native.checkpoint_restore_rows(data, stored, writer.read_prefix)
    if core is None:
        if warn:
            warnings.warn(
                CheckpointIgnoredWarning(
                    f"session {source}: its checkpoint: {reason}; loading the whole log"
                ),
                stacklevel=stacklevel,
            )
        return None
    return core, {"torn": None, "valid_len": 0, "missing_newline": False}


def keep(core: _native.Log, writer: StoreWriterBase) -> bool:
    """Write the checkpoint of ``core``, whose events ``writer`` has all stored (right after a
    flush): beside the log for a file writer (`write`), else in the store when it keeps them
    (`StoreWriterBase.store_checkpoint`). Returns whether one was written."""
    if writer.path is not None:
        return write(core, writer.path)
    if not _worth_one(core):
        return False
    try:
        data = _native.checkpoint_encode_rows(core)
    except FoldlogError as exc:
        log.warning("session %s: no checkpoint written (%s)", (core.header or {}).get("id"), exc)
        return False
    return data is not None and writer.store_checkpoint(data, len(core))


def _worth_one(core: _native.Log) -> bool:
    """A log under `MIN_EVENTS` events and a fork's log (whose history starts in its parent's)
    get no checkpoint."""
    header = core.header
    parent = header.get("parent") if header else None
    return len(core) >= MIN_EVENTS and not (isinstance(parent, dict) and parent.get("kind") == "fork")


def write(core: _native.Log, log_path: Path) -> bool:
    """Write the checkpoint of ``core``, whose events are all stored at ``log_path`` (the caller
    has just flushed), atomically (temp file, rename). Not fsynced: a checkpoint is a cache, and
    one cut by a crash fails its own digest and is ignored. A log under `MIN_EVENTS` events and
    a fork's log (whose history starts in its parent's file) get none. Returns whether one was
    written; a failure is logged."""
    if not _worth_one(core):
        return False
    ckpt = checkpoint_path(log_path)
    tmp = ckpt.with_name(f"{ckpt.name}.{os.getpid()}.tmp")
    try:
        data = _native.checkpoint_encode(core, log_path)
        if data is None:
            return False
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it holds conversation lines
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, ckpt)
    except (FoldlogError, OSError) as exc:
        tmp.unlink(missing_ok=True)
        log.warning("%s: no checkpoint written (%s)", log_path, exc)
        return False
    return True


def remove(log_path: Path) -> None:
    """Remove the checkpoint of the log at ``log_path`` (its log erased, rewritten or removed):
    it holds lines of the log's events."""
    checkpoint_path(log_path).unlink(missing_ok=True)


def is_partial(core: _native.Log) -> bool:
    """Whether ``core`` was restored from a checkpoint and has not read its whole log yet."""
    return _native.checkpoint_partial(core)
