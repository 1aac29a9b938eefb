"""One PEP 562 helper for the packages whose public names load on first use (so that
``import foldlog`` never pulls in httpx, llama.cpp glue or a database driver)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def by_module(modules: Mapping[str, tuple[str, ...]]) -> dict[str, str]:
    """A lazy table written as its type-checking imports read (module -> the names it defines),
    turned into what `lazy_attributes` looks up (name -> module)."""
    return {name: module for module, names in modules.items() for name in names}


def lazy_attributes(
    namespace: dict[str, Any], lazy: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a package: ``lazy`` maps a public name to its module."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
