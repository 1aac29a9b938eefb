"""Session stores: where logs live. JSONL files are the embedded default."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldlog.stores.file import FileStore

__all__ = ["FileStore"]


def __getattr__(name: str) -> Any:
    if name == "FileStore":
        from foldlog.stores.file import FileStore

        return FileStore
    raise AttributeError(f"module 'foldlog.stores' has no attribute {name!r}")
