"""Writing converted transcripts as foldlog logs: the one import driver of ``foldlog log import``
and the ``batch import`` job.

A converted conversation is a tree (its sub-agent runs and forks are ``children``); each node is
one log. A child is written beside its parent as ``<parent stem>.<child name>.jsonl`` with the
session id ``<parent id>.<child name>`` and a header parent link naming the parent's id. The
header's meta records the import: ``imported`` = the converter's meta (the source file's *name*,
never its path) and ``importedAt`` (epoch ms). Before a log is written, its bytes are loaded in
memory as `Session.load` would load the file (the core's load normalizer): that proves it loads,
and says whether the source left calls unanswered (``needs_repair``); the file is written once,
with exactly those bytes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.errors import OutputExistsError

if TYPE_CHECKING:
    from foldlog.interchange.events import Conversation


@dataclass(frozen=True, slots=True)
class PlannedLog:
    """Where one conversation of a tree goes: its file, session id and header parent link."""

    conversation: Conversation
    path: Path
    session_id: str
    parent: dict[str, Any] | None


def plan_logs(
    conv: Conversation, target: Path, session_id: str, parent: dict[str, Any] | None = None
) -> list[PlannedLog]:
    """The logs of ``conv`` and all its descendants, parents before children."""
    from foldlog.stores.base import safe_session_id

    out = [PlannedLog(conv, target, session_id, parent)]
    for child in conv.children:
        name = safe_session_id(child.name or "child")
        link = {"id": session_id, **(child.link or {})}
        child_target = target.with_name(f"{target.stem}.{name}.jsonl")
        out.extend(plan_logs(child, child_target, f"{session_id}.{name}", link))
    return out


def shared_target(plan: Iterable[PlannedLog]) -> Path | None:
    """A file two logs of ``plan`` would both be written to, if any."""
    seen: set[Path] = set()
    for item in plan:
        if item.path in seen:
            return item.path
        seen.add(item.path)
    return None


def check_targets(plan: Iterable[PlannedLog], *, force: bool, hint: str = "use --force to overwrite") -> None:
    """Refuse (unless ``force``) a plan that would write over an existing file — before anything
    is written; ``hint`` ends the error."""
    existing = [p.path for p in plan if p.path.exists()]
    if existing and not force:
        raise OutputExistsError(f"{existing[0]} exists ({hint})")


def write_logs(plan: Iterable[PlannedLog], *, imported_at: int | None = None) -> list[dict[str, Any]]:
    """Write every planned log (an existing file is replaced: `check_targets` decides whether
    that is allowed) and return one report per log: its path, id, parent link, counts, repairs,
    warnings and what was left out."""
    from foldlog import _core
    from foldlog.interchange.writer import write_conversation
    from foldlog.log.media import extract_log
    from foldlog.log.session import Session, now_ms
    from foldlog.stores.file import private_folder
    from foldlog.stores.media import FileMediaStore

    at = imported_at if imported_at is not None else now_ms()
    written: list[dict[str, Any]] = []
    for item in plan:
        conv = item.conversation
        private_folder(item.path.parent)
        session = Session(
            id=item.session_id, meta={"imported": conv.meta, "importedAt": at}, parent=item.parent
        )
        write_conversation(conv, session)
        # the media of the transcript stored once, beside the logs (foldlog.log.media)
        data = extract_log(session.to_bytes(), FileMediaStore.beside(item.path))
        # the load normalizer on the bytes about to be written (an imported log is never a fork
        # that reads its parent's file, so these bytes are the whole log `Session.load` would read)
        check = Session.from_bytes(data, source=str(item.path))
        if item.path.exists():
            item.path.unlink()  # the write must not append to the old file
        _core.write_file(item.path, data)  # as `Session.save` writes: temp file, fsync, rename
        written.append(
            {
                "path": str(item.path),
                "id": session.id,
                "parent": item.parent,
                "events": len(conv.events),
                **conv.counts.as_dict(),
                "needs_repair": check.normalized_dirty,
                "repair": {k: v for k, v in check.repair_report.items() if v and k != "events_added"},
                "warnings": list(conv.warnings),
                "left_out": list(conv.left_out),
            }
        )
    return written


__all__ = ["PlannedLog", "check_targets", "plan_logs", "shared_target", "write_logs"]
