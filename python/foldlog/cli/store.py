"""The sessions folder as the CLI sees it: finding a session by id, the latest one.

Listing is the file store's (`FileStore.list_sessions`): quick with many large logs, it reads the
header and the first user message for the preview and counts ``turn/start`` records in the raw
bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

from foldlog.errors import SessionNotFoundError
from foldlog.stores.base import SessionInfo, safe_session_id

SUFFIX = ".jsonl"


def list_sessions(folder: Path) -> list[SessionInfo]:
    """Every session log in ``folder``, newest (last written) first."""
    from foldlog.stores.file import FileStore

    return FileStore(folder).list_sessions()


def latest(folder: Path) -> Path | None:
    """The most recently written session log, without reading any of them."""
    if not folder.is_dir():
        return None
    paths = list(folder.glob(f"*{SUFFIX}"))
    return max(paths, key=lambda p: p.stat().st_mtime) if paths else None


def resolve(ref: str, folder: Path) -> Path:
    """A session reference: an existing path, else an id (or unique id prefix) in ``folder``."""
    as_path = Path(ref).expanduser()
    if as_path.exists():
        return as_path
    exact = folder / f"{ref}{SUFFIX}"
    if exact.exists():
        return exact
    matches = sorted(folder.glob(f"{glob_escape(ref)}*{SUFFIX}")) if folder.is_dir() else []
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        names = ", ".join(m.stem for m in matches[:5])
        raise SessionNotFoundError(f"session {ref!r} is ambiguous in {folder}: {names}")
    raise SessionNotFoundError(f"no session log {ref!r} (not a file, and no such id in {folder})")


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def safe_id(text: str) -> str:
    """A file-name-safe session id (the store's rule: `foldlog.stores.base.safe_session_id`)."""
    return safe_session_id(text)
