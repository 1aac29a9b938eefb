"""The sessions folder as the CLI sees it: listing, finding a session by id, the latest one.

Listing must stay quick with many large logs, so it does not load sessions: it reads the header
and the first user message for the preview and counts ``turn/start`` records in the raw bytes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldlog.stores.file import preview_of

_TURN = re.compile(rb'"type"\s*:\s*"turn/start"')
SUFFIX = ".jsonl"


@dataclass(frozen=True, slots=True)
class SessionInfo:
    id: str
    path: Path
    size: int
    mtime: float
    turns: int
    preview: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": str(self.path),
            "size": self.size,
            "last_used": self.mtime,
            "turns": self.turns,
            "preview": self.preview,
        }


def describe(path: Path) -> SessionInfo:
    stat = path.stat()
    data = path.read_bytes()
    session_id = path.stem
    first = data.split(b"\n", 1)[0]
    try:
        header = json.loads(first)
        if isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str):
            session_id = header["id"]
    except ValueError:
        pass
    return SessionInfo(
        session_id, path, stat.st_size, stat.st_mtime, len(_TURN.findall(data)), preview_of(data) or ""
    )


def list_sessions(folder: Path) -> list[SessionInfo]:
    """Every session log in ``folder``, newest (last written) first."""
    if not folder.is_dir():
        return []
    infos = []
    for path in folder.glob(f"*{SUFFIX}"):
        try:
            infos.append(describe(path))
        except OSError:
            continue  # removed while we looked
    return sorted(infos, key=lambda i: i.mtime, reverse=True)


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
        raise FileNotFoundError(f"session {ref!r} is ambiguous in {folder}: {names}")
    raise FileNotFoundError(f"no session log {ref!r} (not a file, and no such id in {folder})")


def glob_escape(text: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", text)


def safe_id(text: str) -> str:
    """A file-name-safe session id."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.")
    return cleaned[:120] or "session"
