"""Session stores: where logs live. JSONL files are the embedded default; PostgreSQL for many hosts.

Names resolve lazily so that importing foldlog never imports a database driver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from foldlog.stores.base import SessionInfo, SessionStore, StoreWriter

_LAZY: dict[str, str] = {
    "FileStore": "foldlog.stores.file",
    "PostgresStore": "foldlog.stores.postgres",
}

if TYPE_CHECKING:
    from foldlog.stores.file import FileStore
    from foldlog.stores.postgres import PostgresStore


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'foldlog.stores' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = ["FileStore", "PostgresStore", "SessionInfo", "SessionStore", "StoreWriter"]
