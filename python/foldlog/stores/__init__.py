"""Session stores: where logs live. JSONL files are the embedded default; PostgreSQL for many hosts.

Names resolve lazily so that importing foldlog never imports a database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes
from foldlog.stores.base import SessionInfo, SessionStore, StoreWriter

_LAZY = by_module(
    {
        "foldlog.stores.file": ("FileStore",),
        "foldlog.stores.postgres": ("PostgresStore",),
        "foldlog.stores.retention": ("PruneReport", "parse_duration", "prune"),
    }
)

if TYPE_CHECKING:
    from foldlog.stores.file import FileStore
    from foldlog.stores.postgres import PostgresStore
    from foldlog.stores.retention import PruneReport, parse_duration, prune


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)


__all__ = [
    "FileStore",
    "PostgresStore",
    "PruneReport",
    "SessionInfo",
    "SessionStore",
    "StoreWriter",
    "parse_duration",
    "prune",
]
