"""Request bodies of a session that holds media references, built as incrementally as those of
any other session.

The core keeps each message of a request serialised (`foldlog.log.wire`), and for a stored
session those cached segments hold the references, not the data. A body is therefore the core's
segments with only the messages that reference media sent in another form: resolved (the data
put back, `foldlog.log.media.Resolver`) and written by the core in the request's wire style, so
the body is byte for byte the one of the same session with its media inline. What is resolved
is kept in the session's `MediaCache` for its next requests: a step on a long session costs the
new messages plus a look-up per message that references media, not a pass over the history
(before: every message converted and written again, every content read from the store again).

The cache is keyed by content (a content by its hash; a resolved message, and its form in each
wire style, by the message's reference form, `foldlog.log.media.message_key`), so an entry
never goes stale, and it is bounded in bytes: past `DEFAULT_CACHE_BYTES` the least recently
used entries go (a session whose media outgrow it resolves again what was dropped, as before).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Mapping
from typing import TYPE_CHECKING, Any

from foldlog import _core
from foldlog.log.frozen import MessageSequence
from foldlog.log.media import Resolver, ResolvingMessages, message_key

if TYPE_CHECKING:
    from foldlog.log.wire import WireMessages
    from foldlog.stores.media import MediaStore

#: bytes a session keeps of resolved media (contents, messages and their serialised forms)
DEFAULT_CACHE_BYTES = 64 << 20


class MediaCache:
    """What the requests of one session resolved, kept for its next requests: a least recently
    used map bounded by the bytes of its values (an entry larger than the bound is not kept)."""

    __slots__ = ("_entries", "_lock", "_nbytes", "max_bytes")

    def __init__(self, max_bytes: int = DEFAULT_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._nbytes = 0
        # requests are built on the loop's thread, their messages may be read on others
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def nbytes(self) -> int:
        return self._nbytes

    def get(self, key: Hashable) -> Any:
        """The value kept for ``key`` (now the most recently used), or None."""
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            return found[0]

    def put(self, key: Hashable, value: Any, size: int) -> None:
        """Keep ``value`` (``size`` bytes) for ``key``, dropping the least recently used entries
        past the bound."""
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._nbytes -= old[1]
            self._entries[key] = (value, size)
            self._nbytes += size
            while self._nbytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._nbytes -= dropped


#: what `_core.encode_request` writes around the messages of a body without other fields
_HEAD, _TAIL = _core.encode_frame({})


def styled_segment(message: Mapping[str, Any], style: str) -> bytes:
    """``message`` serialised by the core as ``style`` sends it: the segment it would have
    were its data inline."""
    return _core.encode_request({}, [message], style)[len(_HEAD) : -len(_TAIL)]


def resolve_wire(
    wire: WireMessages, store: MediaStore | None, session: str, cache: MediaCache
) -> WireMessages:
    """``wire`` with its references resolved: the core's segments with those of the messages
    that reference media replaced, its messages resolved when read; ``wire`` itself when no
    message references media (the core says which do: none, in O(new events), when no event of
    the log may hold a reference)."""
    from foldlog.log.wire import WireMessages

    messages, segments = wire.messages, wire.segments
    if not isinstance(messages, MessageSequence) or not isinstance(segments, _core.WireSegments):
        return wire
    referencing = messages.media_indexes()
    if not referencing:
        return wire
    resolver = Resolver(store, session, shared=cache)
    style = segments.style
    replaced: list[tuple[int, bytes]] = []
    for i in referencing:
        raw = messages[i]
        key = message_key(raw)
        segment = cache.get(("segment", style, key))
        if segment is None:
            segment = styled_segment(resolver.message(raw, key), style)
            cache.put(("segment", style, key), segment, len(segment))
        replaced.append((messages._start + i, segment))
    at = frozenset(messages._start + i for i in referencing)
    out = ResolvingMessages(messages._items, resolver, at, messages._start, messages._stop)
    return WireMessages(out, segments.replaced(replaced))


__all__ = ["DEFAULT_CACHE_BYTES", "MediaCache", "resolve_wire", "styled_segment"]
