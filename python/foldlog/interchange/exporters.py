"""Sessions out: the registry of export formats (``foldlog log export --to``, ``foldlog batch
export --to``). Each exporter turns a loaded session into the bytes of one file.

``openai``: the derived messages as a JSON array of OpenAI chat messages (``wire=True``: after
the strict send normalizer, exactly what a request would carry).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from foldlog.errors import ConfigError
from foldlog.log.frozen import thaw

if TYPE_CHECKING:
    from foldlog.log.session import Session

Exporter = Callable[["Session", bool], bytes]


def _openai(session: Session, wire: bool) -> bytes:
    messages = session.wire_messages() if wire else [dict(m) for m in session.derive_messages()]
    return (json.dumps(thaw(messages), indent=2, ensure_ascii=False) + "\n").encode()


#: format name -> (exporter, file suffix)
EXPORTERS: dict[str, tuple[Exporter, str]] = {
    "openai": (_openai, ".json"),
}


def export(format: str, session: Session, *, wire: bool = False) -> bytes:
    """``session`` in ``format`` (a key of :data:`EXPORTERS`), as the bytes of one file."""
    entry = EXPORTERS.get(format)
    if entry is None:
        raise ConfigError(f"unknown export format {format!r} (known: {', '.join(EXPORTERS)})")
    return entry[0](session, wire)


def suffix(format: str) -> str:
    """The file suffix of ``format``'s files (``.json``)."""
    entry = EXPORTERS.get(format)
    if entry is None:
        raise ConfigError(f"unknown export format {format!r} (known: {', '.join(EXPORTERS)})")
    return entry[1]


__all__ = ["EXPORTERS", "Exporter", "export", "suffix"]
