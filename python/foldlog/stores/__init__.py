"""Session stores: where logs live. JSONL files are the embedded default; PostgreSQL for many hosts.

Names resolve lazily so that importing foldlog never imports a database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import lazy_attributes
from foldlog.stores.base import SessionInfo, SessionStore, StoreWriter

_LAZY: dict[str, str] = {
    "FileStore": "foldlog.stores.file",
    "PostgresStore": "foldlog.stores.postgres",
}

if TYPE_CHECKING:
    from foldlog.stores.file import FileStore
    from foldlog.stores.postgres import PostgresStore


__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)


__all__ = ["FileStore", "PostgresStore", "SessionInfo", "SessionStore", "StoreWriter"]
