"""Media references: the base64 data of a message's images, audio and files moved into the
session store's media store on the way into the log, and put back where it is needed.

A content block whose payload is base64 data (an ``image_url`` or ``file`` data URL, an
``input_audio``, a base64 ``image`` or ``document`` source) is recorded as a *media reference*
(docs/log-format.md, "Media references"): the same block, its base64 data replaced by
``foldlog-media:sha256:<hash>``, plus ``"media": {"sha256", "mediaType", "size", "width"?,
"height"?}`` (an image's size is read by the core, as the token counter reads it from the data:
a stored image costs what it cost inline). The block keeps its type, so everything that goes by
block types (the core's wire mapping, a provider's ``content_types``, a tool result's
attachments) sees it as before.

- `extract` makes the references (`Session` calls it on every append through a session with a
  store, before the core checks and records the event; `extract_log` does it to a log's bytes on
  import). The bytes are stored first: an event never references bytes that are not stored.
- `resolve` puts the data back, reading the bytes only then: the session's ``wire_request``
  (what a request body is made of: `foldlog.log.media_wire.resolve_wire`, which keeps what it
  resolved for the session's next requests) and exports (`inline_session`). A reference whose
  bytes are gone raises `MissingMediaError` naming the hash and the session.
- `foldlog.stores.media.referenced_hashes` lists the hashes a log's bytes reference (retention
  removes the media no log references: `foldlog.stores.retention.remove_unreferenced_media`).

Only data that round-trips exactly is moved (standard base64, padded, nothing else in the
string): the resolved block is the block that was given, byte for byte.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

from foldlog import _core
from foldlog.errors import MissingMediaError
from foldlog.log.frozen import FrozenList, MessageSequence, freeze, thaw
from foldlog.stores.media import REF_PREFIX, MediaStore

if TYPE_CHECKING:
    from foldlog.log.media_wire import MediaCache
    from foldlog.log.session import Session

#: where each block type that can carry base64 data holds it, and whether it is a data URL
_PAYLOAD: dict[str, tuple[str, str, bool]] = {
    "image_url": ("image_url", "url", True),
    "file": ("file", "file_data", True),
    "input_audio": ("input_audio", "data", False),
    "image": ("source", "data", False),
    "document": ("source", "data", False),
}
_IMAGES = ("image_url", "image")


def _exact_base64(text: str) -> bytes | None:
    """The bytes of ``text`` when it is their standard, padded base64 and nothing else."""
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None
    return data if base64.b64encode(data) == text.encode("ascii") else None


def _stored_block(block: Mapping[str, Any], store: MediaStore) -> dict[str, Any] | None:
    """``block`` as a media reference (its bytes stored), or None when it carries no base64
    data that round-trips exactly."""
    kind = block.get("type")
    place = _PAYLOAD.get(kind) if isinstance(kind, str) else None
    if place is None or "media" in block:
        return None
    outer, key, data_url = place
    media_type: Any
    holder = block.get(outer)
    if not isinstance(holder, Mapping):
        return None
    payload = holder.get(key)
    if not isinstance(payload, str) or not payload:
        return None
    if data_url:
        meta, comma, encoded = payload.partition(",")
        if not comma or not meta.startswith("data:") or not meta.endswith(";base64"):
            return None
        media_type = meta[len("data:") : -len(";base64")]
    elif outer == "source":
        if holder.get("type") != "base64":
            return None
        media_type, encoded = holder.get("media_type"), payload
    else:
        fmt = holder.get("format")
        media_type, encoded = (f"audio/{fmt}" if isinstance(fmt, str) and fmt else None), payload
    if not isinstance(media_type, str) or not media_type or "," in media_type:
        return None
    data = _exact_base64(encoded)
    if data is None:
        return None
    sha = store.put(data)
    reference = f"{REF_PREFIX}{sha}"
    media: dict[str, Any] = {"sha256": sha, "mediaType": media_type, "size": len(data)}
    if kind in _IMAGES:
        size = _core.media_image_size(data)  # the core's rule: what the token counter reads
        if size is not None:
            media["width"], media["height"] = size
    new_holder = dict(holder)
    new_holder[key] = f"data:{media_type};base64,{reference}" if data_url else reference
    out = dict(block)
    out[outer] = new_holder
    out["media"] = media
    return out


#: leaves that hold no blocks (the common case, tested first: a walk per append must be cheap)
_LEAVES = (str, int, float, bool, type(None))


def extract(value: Any, store: MediaStore) -> Any:
    """``value`` (an event's data, a message) with every block of base64 data as a media
    reference, its bytes in ``store``; ``value`` itself when it holds none (nothing copied)."""
    if value.__class__ in _LEAVES:
        return value
    if isinstance(value, (list, tuple)):
        items: list[Any] | None = None
        for i, v in enumerate(value):
            if v.__class__ in _LEAVES:
                continue
            new = extract(v, store)
            if new is not v:
                items = items if items is not None else list(value)
                items[i] = new
        return value if items is None else items
    if not isinstance(value, Mapping):
        return value
    stored = _stored_block(value, store) if value.get("type") in _PAYLOAD else None
    if stored is not None:
        return stored
    changed: dict[str, Any] | None = None
    for k, v in value.items():
        if v.__class__ in _LEAVES:
            continue
        new = extract(v, store)
        if new is not v:
            changed = changed if changed is not None else dict(value)
            changed[k] = new
    return value if changed is None else changed


def extract_events(events: Iterable[Mapping[str, Any]], store: MediaStore) -> list[Mapping[str, Any]]:
    """Envelope-shaped events (``{"type","data",…}``) with their data's media stored."""
    out: list[Mapping[str, Any]] = []
    for event in events:
        data = event.get("data") if isinstance(event, Mapping) else None
        new = extract(data, store) if data is not None else data
        out.append(event if new is data else {**event, "data": new})
    return out


def _line_may_hold_media(line: bytes) -> bool:
    return b";base64," in line or b'"base64"' in line or b'"input_audio"' in line


def extract_log(data: bytes, store: MediaStore) -> bytes:
    """A log's JSONL bytes with the media of its events stored (an import writes the log this
    way); lines without base64 data are kept byte for byte."""
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if not _line_may_hold_media(line):
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue  # not this module's to judge: the reader reports it
        new = extract(record, store)
        if new is not record:
            lines[i] = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode()
    return b"\n".join(lines)


def message_key(message: Mapping[str, Any]) -> bytes:
    """What a message is, as a cache key: its JSON in the reference form (small: no media data).
    What it resolves to, and how a style writes that, depend on this alone."""
    return _core.encode_json(message)


@dataclass(slots=True)
class Resolver:
    """Puts the data back into references, reading each content once per resolver (and once
    per session for the resolvers of its requests, which share its `MediaCache`)."""

    store: MediaStore | None
    session: str
    #: leave a reference whose bytes are gone as it is (the viewer shows what it can)
    keep_missing: bool = False
    #: what earlier resolvers of the session resolved (contents by hash, resolved messages)
    shared: MediaCache | None = None
    _encoded: dict[str, str] | None = None
    #: characters put in so far (what a resolved message costs the cache beyond its key)
    _added: int = 0

    def encoded(self, sha: str) -> str:
        cache = self._encoded if self._encoded is not None else {}
        self._encoded = cache
        if sha not in cache and self.shared is not None:
            kept = self.shared.get(("content", sha))
            if isinstance(kept, str):
                cache[sha] = kept
        if sha not in cache:
            if self.store is None:
                raise MissingMediaError(
                    f"session {self.session} references media {sha}, and has no media store to "
                    "read it from (a log read from bytes: open it from its store)",
                    sha256=sha,
                    session=self.session,
                )
            try:
                data = self.store.get(sha)
            except MissingMediaError as exc:
                raise MissingMediaError(
                    f"session {self.session} references media {sha}, which is not in its media "
                    f"store ({self.store!r}): removed, or the log moved without it",
                    sha256=sha,
                    session=self.session,
                ) from exc
            cache[sha] = base64.b64encode(data).decode("ascii")
            if self.shared is not None:
                self.shared.put(("content", sha), cache[sha], len(cache[sha]))
        return cache[sha]

    def message(self, message: Mapping[str, Any], key: bytes | None = None) -> Mapping[str, Any]:
        """``message`` (which holds references) resolved and frozen; taken from the shared
        cache when a resolver of the session resolved it before (``key``: its `message_key`)."""
        if self.shared is None:
            return freeze(self.resolve(thaw(message)))  # type: ignore[no-any-return]
        key = message_key(message) if key is None else key
        found = self.shared.get(("message", key))
        if found is None:
            before = self._added
            found = freeze(self.resolve(thaw(message)))
            self.shared.put(("message", key), found, len(key) + self._added - before)
        return found  # type: ignore[no-any-return]

    def resolve(self, value: Any) -> Any:
        """``value`` with its references resolved (new plain containers where one was; ``value``
        itself when it holds none)."""
        if isinstance(value, Mapping):
            media = value.get("media")
            sha = media.get("sha256") if isinstance(media, Mapping) else None
            if isinstance(sha, str) and "type" in value:
                try:
                    return {k: self._put_back(v, sha) for k, v in value.items() if k != "media"}
                except MissingMediaError:
                    if self.keep_missing:
                        return value
                    raise
            changed: dict[str, Any] | None = None
            for k, v in value.items():
                if isinstance(v, (Mapping, list, tuple)):
                    new = self.resolve(v)
                    if new is not v:
                        changed = changed if changed is not None else dict(value)
                        changed[k] = new
            return value if changed is None else changed
        if isinstance(value, (list, tuple)):
            items: list[Any] | None = None
            for i, v in enumerate(value):
                if isinstance(v, (Mapping, list, tuple)):
                    new = self.resolve(v)
                    if new is not v:
                        items = items if items is not None else list(value)
                        items[i] = new
            return value if items is None else items
        return value

    def _put_back(self, value: Any, sha: str) -> Any:
        if isinstance(value, str):
            ref = REF_PREFIX + sha
            if ref not in value:
                return value
            encoded = self.encoded(sha)
            self._added += len(encoded) - len(ref)
            return encoded if value == ref else value.replace(ref, encoded)  # no copy when whole
        if isinstance(value, Mapping):
            return {k: self._put_back(v, sha) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._put_back(v, sha) for v in value]
        return value


# --- resolving a request's messages --------------------------------------------------------


class ResolvingMessages(MessageSequence):
    """The session's messages (a `MessageSequence`) with the references of a message resolved
    when the message is read: once per sequence (read again, it is the same object), and never
    for the messages no one reads (counting, planning and the core's request segments do not).
    Which messages reference media the core says (`MessageSequence.media_indexes`)."""

    __slots__ = ("_referencing", "_resolved", "_resolver")

    def __init__(
        self,
        items: _core.MessageItems,
        resolver: Resolver,
        referencing: frozenset[int],
        start: int = 0,
        stop: int | None = None,
        resolved: dict[int, Mapping[str, Any]] | None = None,
    ) -> None:
        super().__init__(items, start, stop)
        self._resolver = resolver
        #: the indexes, in the log's messages, of those that reference media
        self._referencing = referencing
        #: resolved messages by their index in the log's messages (shared with slices)
        self._resolved: dict[int, Mapping[str, Any]] = {} if resolved is None else resolved

    def _resolve(self, at: int, message: Mapping[str, Any]) -> Mapping[str, Any]:
        if at not in self._referencing:
            return message
        found = self._resolved.get(at)
        if found is None:
            found = self._resolved[at] = self._resolver.message(message)
        return found

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                begin = self._start + start
                end = self._start + max(start, stop)
                return ResolvingMessages(
                    self._items, self._resolver, self._referencing, begin, end, self._resolved
                )
            return FrozenList(self[i] for i in range(start, stop, step))
        message = super().__getitem__(index)
        i = index.__index__()
        return self._resolve(self._start + (i + len(self) if i < 0 else i), message)

    def __iter__(self) -> Iterator[Mapping[str, Any]]:
        for at, message in enumerate(super().__iter__(), self._start):
            yield self._resolve(at, message)


def resolving(messages: MessageSequence, store: MediaStore | None, session: str) -> MessageSequence:
    """``messages`` resolving their references when read (a session with a media store)."""
    if store is None:
        return messages
    referencing = messages.media_indexes()
    if not referencing:
        return messages  # no reference (the common case): nothing to resolve, nothing to wrap
    return ResolvingMessages(
        messages._items,
        Resolver(store, session),
        frozenset(messages._start + i for i in referencing),
        messages._start,
        messages._stop,
    )


# --- whole logs ----------------------------------------------------------------------------


def inline_log(data: bytes, store: MediaStore | None, session: str) -> bytes:
    """A log's JSONL bytes with every reference resolved (the data back in its blocks); lines
    without one are kept byte for byte."""
    if REF_PREFIX.encode() not in data:
        return data
    resolver = Resolver(store, session)
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        if REF_PREFIX.encode() in line:
            record = json.loads(line)
            lines[i] = json.dumps(
                resolver.resolve(record), ensure_ascii=False, separators=(",", ":")
            ).encode()
    return b"\n".join(lines)


def inline_session(session: Session) -> Session:
    """``session`` with its media inline (exports write the data, not references): a copy in
    memory read from its resolved log, or ``session`` itself when it references no media."""
    data = session.to_bytes()
    if REF_PREFIX.encode() not in data:
        return session
    from foldlog.log.session import Session

    copy = Session.from_bytes(inline_log(data, session.media, session.id), source=f"<{session.id}>")
    copy.path, copy.model = session.path, session.model
    return copy


__all__ = [
    "REF_PREFIX",
    "Resolver",
    "extract",
    "extract_events",
    "extract_log",
    "inline_log",
    "inline_session",
    "message_key",
    "resolving",
]
