"""`Session`: the thread-safe façade over one event log.

The log (in the Rust core) is the single source of truth; the messages a model sees are
derived from it. One writer, many reader threads: readers never see a half-appended event.
A file-backed session (`Session.open`) holds the store's single-writer lock and writes each
pending batch, fsynced, on `flush()` (the agent flushes before every model request and after
every tool batch) and on `close()`.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from foldlog import _core as _native
from foldlog.errors import ConfigError, InvalidEventError, StorageError
from foldlog.log import checkpoint
from foldlog.log.counting import TokenCounts
from foldlog.log.frozen import EventsView, MessageSequence, freeze, thaw
from foldlog.log.grammar import kinds
from foldlog.log.media import extract, resolving
from foldlog.log.media_wire import MediaCache, resolve_wire
from foldlog.log.stream import EventStream
from foldlog.stores.base import StoreWriterBase, WriterSource, declared_writer
from foldlog.stores.media import MediaStore, media_store_for

if TYPE_CHECKING:
    from foldlog.log.erasure import Erased
    from foldlog.log.wire import WireMessages

log = logging.getLogger("foldlog.session")

Durability = Literal["batch", "event", "none"]


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def new_session_id() -> str:
    """Sortable by creation time, unique without coordination: ``20261129-130442-1a2b3c``."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def header_line(
    session_id: str, meta: Mapping[str, Any] | None = None, parent: Mapping[str, Any] | None = None
) -> bytes:
    """The header line of a new log (the core writes it: `_native.header_line`). ``parent`` links a
    fork or a sub-agent's session to the session it comes from (docs/log-format.md, "Parents")."""
    return _native.header_line(session_id, now_ms(), dict(meta or {}), dict(parent) if parent else None)


class Session(TokenCounts):
    """An append-only, typed event log and the chat history derived from it."""

    #: the core log; ``None`` while released (see `release`)
    _log: _native.Log | None
    #: a released session without a store: its log's bytes, compressed
    _released: bytes | None

    def __init__(
        self,
        system: str | None = None,
        *,
        id: str | None = None,
        meta: Mapping[str, Any] | None = None,
        parent: Mapping[str, Any] | None = None,
    ) -> None:
        self.id = id or new_session_id()
        self._init_state()
        self._log = _native.Log(self.id, now_ms(), dict(meta or {}), dict(parent) if parent else None)
        if system is not None:
            self.add({"role": "system", "content": system})

    def _init_state(self) -> None:
        self._log = None
        self._released = None
        self.path: Path | None = None
        self._writer: StoreWriterBase | None = None
        self._durability: Durability = "batch"
        self._lock = threading.RLock()
        #: the events as a reconnectable stream: ``subscribe(fn, after_seq=…)``, ``events_since``
        self.stream = EventStream(self._lock, lambda: len(self._core), self._read_events)
        #: the store of a session opened on a store object (a fork into it copies)
        self._store: WriterSource | None = None
        #: where a stored session's media live (`foldlog.log.media`); None: kept inline
        self.media: MediaStore | None = None
        #: what its requests resolved of them, kept for the next requests (bounded)
        self.media_cache = MediaCache()
        self.normalized_dirty = False
        self._checkpoint_due = False
        self.repair_report: dict[str, Any] = {}
        self.torn_tail: dict[str, int] | None = None
        self.unfinished_compaction: int | None = None
        #: the model whose tokenizer `token_count()` uses by default (the agent sets it)
        self.model: str | None = None
        # the latest reported prompt tokens: (tokens, rewrite_version, derived messages then)
        self._reported: tuple[int, int, int] | None = None
        self._calibration: list[tuple[int, int]] = []
        self._calibrated_for: tuple[int, int, int] | None = None

    # --- construction from storage -------------------------------------------------------

    @classmethod
    def _from_core(cls, core: _native.Log, info: Mapping[str, Any], source: str) -> Session:
        self = cls.__new__(cls)
        self._init_state()
        self._log = core
        header = core.header
        self.id = str(header.get("id")) if header and header.get("id") else Path(source).stem
        self.torn_tail = info.get("torn")
        if self.torn_tail:
            log.warning(
                "%s: torn last line %d cut off (%d bytes); the events before it are intact",
                source,
                self.torn_tail["line"],
                self.torn_tail["bytes"],
            )
        self.unfinished_compaction = core.open_compaction()
        if self.unfinished_compaction is not None:
            log.warning(
                "%s: compaction started at event #%d never finished (crash mid-compaction); "
                "the surface is as it was before it",
                source,
                self.unfinished_compaction,
            )
        return self

    def _normalize(self) -> None:
        report = _native.normalize_on_load(self._core, now_ms())
        self.repair_report = report
        self.normalized_dirty = report["events_added"] > 0

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Session:
        """Read a log file and apply the load normalizer, in memory: the file is not changed.

        A torn last line is cut (see ``torn_tail``); damage followed by valid events raises
        `CorruptLogError` naming the line, and so does an empty file ("empty file: no header":
        a log always starts with its header; `open` is what starts one); a file whose first line
        is neither a header nor an event is not a log: `NotALogError` (`open` and `foldlog log
        repair` refuse it too, and nothing of it is cut); a log from a newer foldlog raises
        `UnsupportedFormatError`.
        """
        from foldlog.log.forks import read_file

        core, info = checkpoint.restore(Path(path)) or read_file(Path(path))
        self = cls._from_core(core, info, str(path))
        self.media = media_store_for(None, Path(path))  # to read its references (appends stay inline)
        self._normalize()
        return self

    @classmethod
    def from_bytes(cls, data: bytes, *, source: str = "<bytes>") -> Session:
        """Like `load`, from bytes (e.g. a log streamed out of a database)."""
        core, info = _native.Log.parse(data, source, allow_empty=False)
        self = cls._from_core(core, info, source)
        self._normalize()
        return self

    @classmethod
    def open(
        cls,
        target: str | os.PathLike[str] | WriterSource,
        session_id: str | None = None,
        *,
        system: str | None = None,
        meta: Mapping[str, Any] | None = None,
        parent: Mapping[str, Any] | None = None,
        durability: Durability = "batch",
    ) -> Session:
        """Open a session for writing: creates it or continues it, holding its single-writer lock.

        ``target`` is a ``.jsonl`` file path, a folder (with ``session_id``), or a store
        (`foldlog.stores.SessionStore`; `open` needs its `open_writer`, and reaches the writer only
        through `StoreWriterBase`'s members: `declared_writer` gives a writer that implements only
        `StoreWriter` their defaults). A second writer fails at
        once with `SessionLockedError` naming the holder. An open turn left by a crash is closed
        by appending repair events (history is never rewritten in place). ``meta`` and ``parent``
        go into the header of a new log (an existing log keeps its own).
        """
        from foldlog.stores.file import FileStore, FileStoreWriter

        if durability not in ("batch", "event", "none"):
            raise ConfigError(f"durability must be 'batch', 'event' or 'none', not {durability!r}")
        path: Path | None = None
        store: WriterSource | None
        if isinstance(target, (str, os.PathLike)):
            p = Path(target)
            if p.suffix == ".jsonl" and session_id is None:
                path = p
                store = None
            else:
                store = FileStore(p)
        else:
            store = target
        sid = session_id or (path.stem if path else new_session_id())
        head = header_line(sid, meta, parent)
        writer: StoreWriterBase
        if store is None:
            assert path is not None
            writer = FileStoreWriter(path, head, durable=durability != "none")
        elif isinstance(store, FileStore):
            writer = store.open_writer(sid, head, durable=durability != "none")
            path = store.path_for(sid)
        else:
            writer = declared_writer(store.open_writer(sid, head))
        try:
            core, info, shift = checkpoint.read_for_writer(writer, path, str(path or sid))
            if info["torn"] is not None or info["missing_newline"]:
                writer.cut_tail(info["valid_len"] - shift, info["missing_newline"])
            self = cls._from_core(core, info, str(path or sid))
            self.id = sid if core.header is None else self.id
            _native.mark_flushed(core, len(core))
            self.path = path
            self._store = None if isinstance(store, FileStore) else store
            self._writer = writer
            self.media = media_store_for(store, path)
            self._durability = durability
            self._normalize()
            if system is not None and len(core) == 0:
                self.add({"role": "system", "content": system})
            self.flush()
        except BaseException:
            writer.close()
            raise
        return self

    # --- writing ---------------------------------------------------------------------------

    def _stored(self, value: Any) -> Any:
        """``value`` with its base64 media moved to the media store (a session with a store)."""
        return extract(value, self.media) if self.media is not None and self._writer is not None else value

    def _committed(self, seq: int) -> int:
        if self._durability == "event" and self._writer is not None:
            self.flush()
        self.stream.committed(seq)
        return seq

    def add(self, message: Mapping[str, Any]) -> int:
        """Record an OpenAI-chat-shaped message (``role`` system/user/assistant/tool) as given.

        The message is checked first, in the core (docs/log-format.md, "Message shapes"):
        ``content`` a string or a list of content blocks (text, images, audio, files — kept and
        derived as given), ``tool_calls`` a list of calls, tool messages with their
        ``tool_call_id``; data that is not JSON-safe (NaN, non-string keys, objects) is refused
        too. Anything refused raises `InvalidEventError` naming the place (``content[1].type``)
        and nothing is recorded. Tool calls with cut arguments or empty names are recorded as
        they are (the normalizers deal with them). Returns the event's seq.
        """
        if not isinstance(message, Mapping):
            raise InvalidEventError(
                f"a message must be a mapping with a 'role', not {type(message).__name__}"
            )
        message = self._stored(message)
        with self._lock:
            seq = self._core.add_message(message, now_ms())
        return self._committed(seq)

    def _note_usage(self, data: Mapping[str, Any], derived_before: int) -> None:
        usage = data.get("usage")
        if isinstance(usage, Mapping):
            prompt = usage.get("promptTokens", usage.get("prompt_tokens"))
            if isinstance(prompt, int) and prompt > 0:
                # the usage of the request this reply answers: the messages before the reply
                self._reported = (prompt, self.rewrite_version, derived_before)

    def append_event(
        self,
        type: str,
        data: Mapping[str, Any],
        *,
        surface_op: str | Mapping[str, Any] | None = None,
        source_event_seqs: Sequence[int] | None = None,
    ) -> int:
        """Append any event (see docs/log-format.md). Returns its seq; nothing is written or
        changed on error (a message event's data is checked like `add`'s message)."""
        data = self._stored(data)
        with self._lock:
            usage = type == kinds.ASSISTANT_MESSAGE and isinstance(data, Mapping) and "usage" in data
            before = self._core.derived_len() if usage else 0
            seq = self._core.append(
                type,
                data,
                now_ms(),
                surface_op,
                list(source_event_seqs) if source_event_seqs is not None else None,
            )
            if usage:
                self._note_usage(data, before)
            self._checkpoint_due |= type == kinds.COMPACTION_END
        return self._committed(seq)

    def append_events(self, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """Append several events, all or nothing: each is a mapping with ``type`` and ``data``
        (and ``surfaceOp`` / ``sourceEventSeqs`` when needed, as in the log's envelope). Every
        event is checked — its data, its seqs, its surface op against the surface as the events
        before it in the batch leave it — before the log changes; the first refused event raises
        `InvalidEventError` (its ``index`` attribute says which) and nothing is recorded.
        Subscribers see the events once all are recorded. Returns their seqs."""
        events = [self._stored(e) for e in events]
        with self._lock:
            seqs = self._core.append_batch(events, now_ms())
        for s in seqs:
            self._committed(s)
        return seqs

    def replace(self, messages: Iterable[Mapping[str, Any]]) -> None:
        """Make the surface exactly ``messages`` (recorded as a reset followed by appends).

        All or nothing: every message is checked before anything is recorded; on error the
        events, the derived messages, `rewrite_version` and subscribers are untouched
        (`InvalidEventError` names the message: its ``index`` attribute). Readers holding a
        snapshot keep it; `rewrite_version` moves.
        """
        messages = [self._stored(m) for m in messages]
        with self._lock:
            seqs = self._core.replace_messages(messages, now_ms())
        for s in seqs:
            self._committed(s)

    def flush(self) -> None:
        """Write the pending batch to the store and make it durable (no-op in memory)."""
        writer = self._writer
        if writer is None or self._log is None:
            return  # nothing in memory (released): nothing pending
        with self._lock:
            self._count_batch()
            writer.append_from(self._core)
            if self._checkpoint_due:  # a compaction ended: a small surface
                self._checkpoint_due = not checkpoint.keep(self._core, writer)

    def approve(self, call_id: str) -> int:
        """Approve a call the paused turn waits for (docs/durable-runs.md): the answer is appended
        and stored at once; `Agent.resume` then runs the call, once. From any process that can
        open the session for writing (the one-writer lock applies); `ApprovalStateError` when the
        call is not waiting. Returns the answer's seq."""
        from foldlog.log.unfinished import answer_approval

        return answer_approval(self, call_id, True)

    def deny(self, call_id: str, reason: str) -> int:
        """Deny a call the paused turn waits for: `Agent.resume` gives it an error result with
        ``reason`` instead of running it (otherwise as `approve`)."""
        from foldlog.log.unfinished import answer_approval

        return answer_approval(self, call_id, False, reason)

    def erase(self, seqs: Iterable[int], reason: str) -> Erased:
        """Erase the content of events ``seqs`` (tombstones in their place, a ``log/erasure`` event
        saying which, why and when; the store rewritten in one step: `foldlog.log.erasure`). The
        session goes on with the new log. `ErasureError` names what cannot be erased."""
        from foldlog.log.erasure import erase

        return erase(self, seqs, reason)

    def _adopt(self, core: _native.Log) -> None:
        """Go on with ``core`` (an erasure's new log, stored): the caches of the old one go."""
        self._log, self._released = core, None
        self._reported, self._calibration, self._calibrated_for = None, [], None

    def _count_batch(self) -> None:
        """Count the batch's messages before they are written, so the counts travel with the
        events and a resumed session never tokenizes them again. Counting is a cache and never
        blocks a write: what cannot be counted now is written without its count (and counted
        when a count is asked for)."""
        if self.model is None:
            return
        try:
            from foldlog.log.tokens import Tokenizer

            # only exact counts are kept with the events: no calibration of the estimate here
            tok = Tokenizer.for_model(self.model)
            if tok.exact:
                _native.surface_tokens(self._core, tok._counter)
        except Exception as exc:  # a tokenizer that cannot load, a message it cannot count
            log.warning("session %s: batch written without token counts (%s)", self.id, exc)

    def close(self) -> None:
        """Flush and release the writer's lock. Safe to call twice."""
        writer = self._writer
        if writer is None:
            return
        try:
            self.flush()
        finally:
            writer.close()
            self._writer = None

    # --- memory ------------------------------------------------------------------------------

    @property
    def _core(self) -> _native.Log:
        """The core log, loaded again after `release`."""
        core = self._log
        return core if core is not None else self._reload()

    @property
    def released(self) -> bool:
        """Whether the session holds no log in memory now (see `release`)."""
        return self._log is None

    def release(self) -> None:
        """Drop everything this session can rebuild — the events, the derived messages, the
        request caches — so that an idle session holds almost nothing. The next use loads the log
        again: from its store when it has one (after a flush: everything is stored, with the
        token counts of its messages, so nothing is tokenized again), else from its own bytes,
        kept compressed. Snapshots taken before (`derive_messages`) stay valid.

        A file-backed session keeps its writer's lock and closes its file until the next write.
        Safe to call at any time and more than once."""
        with self._lock:
            core = self._log
            if core is None:
                return
            if self._writer is not None:
                self.flush()
                checkpoint.keep(core, self._writer)
                self._writer.suspend()
            else:
                self._released = zlib.compress(core.to_bytes(), 1)
            self._log = None

    def _reload(self) -> _native.Log:
        with self._lock:
            if self._log is not None:
                return self._log
            source = str(self.path or self.id)
            if self._writer is not None:
                path = self._writer.path
                if path is not None:
                    from foldlog.log.forks import read_file

                    core, info = checkpoint.restore(path) or read_file(path)
                else:
                    restored = checkpoint.restore_stored(self._writer, source)
                    core, info = restored or _native.Log.parse(
                        self._writer.read_log(), source, allow_empty=False
                    )
                if info["torn"] is not None:
                    raise StorageError(f"session {source} changed in its store while it was released")
                _native.mark_flushed(core, len(core))
            else:
                assert self._released is not None, "a released session keeps its bytes"
                core, _ = _native.Log.parse(zlib.decompress(self._released), source)
                self._released = None
            self._log = core
            return core

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the whole log to a new file (atomically: temp file, fsync, rename)."""
        _native.write_file(Path(path), self._core.to_bytes())

    def to_bytes(self) -> bytes:
        """The whole log as JSONL bytes, as `save` writes it (with the token counts kept so far,
        so `from_bytes` of them recounts nothing)."""
        return self._core.to_bytes()

    def _read_events(self, start: int, end: int) -> tuple[Mapping[str, Any], ...]:
        return tuple(self.events[start:end])

    # --- reading ---------------------------------------------------------------------------

    def derive_messages(self) -> MessageSequence:
        """The model-visible history (OpenAI chat shape): an immutable sequence (length,
        indexing, slicing, iteration, equality with lists and tuples) whose items become Python
        objects only when read — a `FrozenDict` each, the same object when read again. Taking it
        costs no conversion of the history; incremental in the core (after appends only new
        surface nodes are derived; after a fold/replace the derivation is redone)."""
        with self._lock:
            return resolving(MessageSequence(self._core.derived()), self.media, self.id)

    def snapshot(self) -> list[dict[str, Any]]:
        """The derived history as plain, mutable deep copies (dicts and lists), safe to keep and
        to change while the loop writes: changing them never changes the log. (`derive_messages`
        gives the frozen, zero-copy messages themselves.)"""
        return thaw(self.derive_messages())  # type: ignore[no-any-return]

    def wire_messages(self) -> list[Mapping[str, Any]]:
        """What a request would carry now: the derived messages after the strict send normalizer
        (results paired to calls, named, orphans dropped, missing results filled).

        The list is new; the messages are the immutable derived ones wherever the normalizer left
        them unchanged, new frozen ones where it filled or renamed a result. Use `foldlog.thaw`
        for mutable copies.
        """
        return list(self.wire_request().messages)

    def wire_json(self) -> bytes:
        """`wire_messages()` as JSON bytes (keys sorted), joined from the core's cached
        per-message JSON: only messages never serialised before are serialised."""
        return self._core.wire_json()

    def wire_request(self, style: str = "keep") -> WireMessages:
        """`wire_messages()` (as a read-only sequence whose items are built only when read)
        together with the same messages serialised by the core in ``style`` (``"keep"``,
        ``"strip"``: without ``reasoning_content``, ``"with-calls"``: DeepSeek's thinking mode),
        taken under one lock so the two agree. Each message is serialised once per style and
        kept: a request after appends costs O(new messages) (see `foldlog.log.wire`)."""
        from foldlog.log.wire import WireMessages

        with self._lock:
            items, segments = self._core.wire_view(style)
        wire = WireMessages(MessageSequence(items), segments)
        return resolve_wire(wire, self.media, self.id, self.media_cache)

    def surface_seqs(self) -> list[int]:
        """The seq of the event behind each derived message."""
        return self._core.derived_seqs()

    def surface_nodes(self) -> list[int]:
        """The seqs of the surface's nodes, in order: what a fold's ``start``..``end`` range
        counts in (a compaction names the nodes it folds by their place here)."""
        return self._core.surface_nodes()

    def has_content(self) -> bool:
        """Anything the model would see beyond the system prompt (an empty assistant message,
        kept in the log only for its usage, is not content)."""
        return self._core.has_content()

    @property
    def rewrite_version(self) -> int:
        """Bumped by every surface rewrite (fold, replace, reset)."""
        return self._core.rewrite_version

    @property
    def events(self) -> EventsView:
        return EventsView(self._core)

    @property
    def header(self) -> Mapping[str, Any] | None:
        h = self._core.header
        return freeze(h) if h is not None else None

    @property
    def parent(self) -> Mapping[str, Any] | None:
        """The header's link to the session this one comes from (a fork, a sub-agent), or None."""
        h = self.header
        p = h.get("parent") if h is not None else None
        return p if isinstance(p, Mapping) else None

    @property
    def open_turn(self) -> tuple[int, int | None] | None:
        """``(turn, step)`` of a turn that has started and not ended."""
        return self._core.open_turn()

    @property
    def last_turn(self) -> int:
        return self._core.last_turn()

    @property
    def writable(self) -> bool:
        return self._writer is not None

    @property
    def flush_syncs(self) -> bool:
        """Whether `flush()` waits for the disk (an fsync): async callers run it off the event loop."""
        return self._writer is not None and self._durability != "none"

    def __len__(self) -> int:
        return len(self._core)

    def __repr__(self) -> str:
        where = f" path={str(self.path)!r}" if self.path else ""
        return f"<Session {self.id} events={len(self._core)}{where}>"
