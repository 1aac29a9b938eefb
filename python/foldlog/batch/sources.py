"""What a batch job runs over: the work items named by its sources.

An :class:`Item` is one unit of work a worker can find on its own: a foldlog log file, a session
in a PostgreSQL store (the worker connects with the DSN), or a foreign transcript file (converted
on the fly by the importer of its format; one file may hold several transcripts, each a session).
Items carry only names (paths, ids), never data: what moves to a worker is a few bytes per item.
"""

from __future__ import annotations

import glob
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from foldlog.errors import ConfigError

ItemKind = Literal["log", "postgres", "foreign"]


@dataclass(frozen=True, slots=True)
class Item:
    """One unit of work: ``kind`` says how a worker reads ``ref``.

    ``key`` names the item in the output (the ``source`` column) and in the done-list beside it.
    """

    key: str
    kind: ItemKind
    ref: str
    format: str | None = None  # the importer's name (``--from``) for a foreign transcript
    dsn: str | None = None  # the store's DSN for a PostgreSQL session


def _expand(source: str) -> list[Path]:
    """The files a source names: a file, the matches of a glob (``**`` recursive), or a folder."""
    if glob.has_magic(source):
        return sorted(Path(p) for p in glob.glob(source, recursive=True) if Path(p).is_file())
    path = Path(source).expanduser()
    if path.is_file():
        return [path]
    if path.is_dir():
        return []  # the caller lists a folder by the rule of its kind
    raise ConfigError(f"batch source {source!r}: no such file, folder or glob match")


def log_items(sources: Iterable[str]) -> list[Item]:
    """Foldlog logs: each file, each glob match, and the sessions of each folder (the file
    store's listing rule, `FileStore.session_paths`)."""
    from foldlog.stores.file import FileStore

    items: list[Item] = []
    for source in sources:
        path = Path(source).expanduser()
        files = FileStore(path).session_paths() if path.is_dir() else _expand(source)
        if not files:
            raise ConfigError(f"batch source {source!r} names no foldlog log (*.jsonl)")
        items += [Item(str(p), "log", str(p)) for p in files]
    return _unique(items)


def foreign_items(sources: Iterable[str], format: str) -> list[Item]:
    """Foreign transcripts of ``format`` (a key of `foldlog.interchange.FORMATS`): each file, each
    glob match, and every file under each folder (hidden files left out)."""
    from foldlog.interchange import FORMATS

    if format not in FORMATS:
        raise ConfigError(f"unknown transcript format {format!r} (known: {', '.join(FORMATS)})")
    items: list[Item] = []
    for source in sources:
        path = Path(source).expanduser()
        if path.is_dir():
            files = sorted(
                p
                for p in path.rglob("*")
                if p.is_file() and not any(part.startswith(".") for part in p.relative_to(path).parts)
            )
        else:
            files = _expand(source)
        if not files:
            raise ConfigError(f"batch source {source!r} names no file")
        items += [Item(str(p), "foreign", str(p), format=format) for p in files]
    return _unique(items)


def postgres_items(dsn: str, ids: Sequence[str] = ()) -> list[Item]:
    """Sessions of a PostgreSQL store: ``ids``, else every session it lists (oldest first, so
    the order does not move while sessions are written)."""
    from foldlog.stores.postgres import PostgresStore

    with PostgresStore(dsn) as store:
        listed = store.list_sessions()
    known = {s.id for s in listed}
    if ids:
        missing = [i for i in ids if i not in known]
        if missing:
            raise ConfigError(f"no session {missing[0]!r} in the PostgreSQL store")
        chosen = list(ids)
    else:
        chosen = [s.id for s in sorted(listed, key=lambda s: (s.created, s.id))]
    return [Item(f"pg:{sid}", "postgres", sid, dsn=dsn) for sid in chosen]


def collect(
    sources: Sequence[str] = (), *, from_format: str | None = None, dsn: str | None = None
) -> list[Item]:
    """The items of a job: ``sources`` (logs, or foreign transcripts with ``from_format``) and,
    with ``dsn``, a PostgreSQL store's sessions (``sources`` are then session ids, all when
    none are given)."""
    if dsn is not None:
        if from_format is not None:
            raise ConfigError("a PostgreSQL store holds foldlog logs: --from does not apply to --dsn")
        return postgres_items(dsn, sources)
    if not sources:
        raise ConfigError("a batch job needs at least one source (a folder, a file or a glob)")
    if from_format is not None:
        return foreign_items(sources, from_format)
    return log_items(sources)


def _unique(items: list[Item]) -> list[Item]:
    seen: set[str] = set()
    out = []
    for item in items:
        if item.key not in seen:
            seen.add(item.key)
            out.append(item)
    return out


__all__ = ["Item", "ItemKind", "collect", "foreign_items", "log_items", "postgres_items"]
