"""A cache of the benchmark's model calls (readers, judges), keyed by a hash of the request.

The key is the SHA-256 of the request as canonical JSON (the provider's model, the messages, the
sampling parameters and the replicate number), so a re-run of the same benchmark sends nothing
and costs nothing, and tests replay recorded answers. One small JSON file per call in the cache
folder, written whole (a temporary file renamed over it): a crash never leaves half an answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from foldlog.errors import ConfigError
from foldlog.providers.base import Provider, Request


def request_key(provider_model: str, request: Request, replicate: int) -> str:
    """The cache key of one call: what the provider would be sent, and the replicate number
    (replicates are separate calls, each cached on its own)."""
    body = {
        "model": request.model or provider_model,
        "messages": list(request.messages),
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "params": dict(request.params),
        "replicate": replicate,
    }
    data = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class ModelCache:
    """``folder``: where answers are kept (``None``: no cache, every call is sent). ``hits`` and
    ``misses`` count this run's calls."""

    folder: Path | None
    hits: int = 0
    misses: int = 0
    _memory: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.folder is not None:
            self.folder = Path(self.folder)
            if self.folder.exists() and not self.folder.is_dir():
                raise ConfigError(f"--cache: {self.folder} exists and is not a folder")

    def _path(self, key: str) -> Path | None:
        return self.folder / f"{key}.json" if self.folder is not None else None

    def get(self, key: str) -> str | None:
        if key in self._memory:
            return self._memory[key]
        path = self._path(key)
        if path is None or not path.is_file():
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            return None  # a damaged entry is a miss: the call is sent again and rewritten
        text = data.get("text") if isinstance(data, Mapping) else None
        return text if isinstance(text, str) else None

    def put(self, key: str, text: str, meta: Mapping[str, Any]) -> None:
        self._memory[key] = text
        path = self._path(key)
        if path is None:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({**meta, "text": text}, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)


async def complete(provider: Provider, request: Request, cache: ModelCache, replicate: int = 0) -> str:
    """The text of one call: from the cache when this request (and replicate) was answered
    before, else sent to ``provider`` and kept. A provider error propagates (nothing is cached)."""
    from foldlog.compaction.summary import _one_call

    model = provider.model or ""
    key = request_key(model, request, replicate)
    cached = cache.get(key)
    if cached is not None:
        cache.hits += 1
        return cached
    text = await _one_call(provider, request, lambda usage: None)
    cache.misses += 1
    cache.put(key, text, {"model": model, "replicate": replicate})
    return text


__all__ = ["ModelCache", "complete", "request_key"]
