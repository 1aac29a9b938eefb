"""Reconnectable event streams: a subscriber that replays what it missed, then follows live.

A UI that loses its connection asks again with the last seq it saw
(`session.stream.subscribe(fn, after_seq=N)`, `session.stream.events_since(N)`: a session's
`EventStream`) and gets every later event once, in seq order: no gap, no duplicate, whatever the
writer does meanwhile.

How: each subscription keeps the seq of the next event it owes (``next_seq``). Whoever may have
something new for it — the subscribe call replaying the past, every append after it commits —
calls `Subscription.catch_up(last)`, which delivers the events ``next_seq..last`` under the
subscription's own lock. An event is delivered by whichever call reaches it first and never
again, so a replay racing an append cannot skip or repeat one; the lock keeps deliveries in seq
order even when several threads append.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from foldlog.errors import StorageError, UnknownSeqError

log = logging.getLogger("foldlog.session")

Subscriber = Callable[[Mapping[str, Any]], object]
#: reads the events ``start..end`` of the log (frozen mappings)
EventReader = Callable[[int, int], "list[Mapping[str, Any]] | tuple[Mapping[str, Any], ...]"]


class Subscription:
    """One subscriber and the seq of the next event it is owed."""

    __slots__ = ("_lock", "active", "fn", "next_seq", "read")

    def __init__(self, fn: Subscriber, next_seq: int, read: EventReader) -> None:
        self.fn = fn
        self.next_seq = next_seq
        self.read = read
        self.active = True
        # re-entrant: a subscriber that appends to the session is delivered the new event too,
        # after the one it is handling (seqs still arrive in order, each once)
        self._lock = threading.RLock()

    def close(self) -> None:
        """Deliver nothing more; returns once a delivery running in another thread is over."""
        self.active = False
        with self._lock:
            pass

    def catch_up(self, last: int) -> None:
        """Deliver every event up to and including seq ``last`` not delivered yet, in order."""
        with self._lock:
            while self.active and self.next_seq <= last:
                batch = self.read(self.next_seq, min(last + 1, self.next_seq + 256))
                if not batch:
                    return
                for event in batch:
                    if not self.active:
                        return
                    seq = self.next_seq
                    self.next_seq += 1
                    try:
                        self.fn(event)
                    except Exception:
                        log.exception("session subscriber %r failed on event #%d", self.fn, seq)


class EventStream:
    """A session's events as a reconnectable stream (`Session.stream`): subscribers that replay
    what they missed and then follow live, and the events after a seq. The session tells it of
    each event it records (`committed`)."""

    def __init__(self, lock: threading.RLock, length: Callable[[], int], read: EventReader) -> None:
        self._lock = lock  # the session's: no event is appended while a subscription starts
        self._length = length
        self._read = read
        self._subscriptions: list[Subscription] = []

    def subscribe(self, fn: Subscriber, *, after_seq: int | None = None) -> Callable[[], None]:
        """Call ``fn(event)`` for each event recorded from now on; with ``after_seq``, first for
        every event after that seq already in the log (-1: all of them), then live — each event
        once, in seq order, without a gap, even while other threads append (a UI that lost its
        connection resumes with the last seq it saw). Returns a function that unsubscribes: once it
        returns, ``fn`` is not running and is not called again.

        ``fn`` runs in the thread that appended the event (or, for the replay, in this one). An
        exception in a subscriber is logged and never breaks the writer. An ``after_seq`` the log
        does not hold raises `UnknownSeqError`."""
        with self._lock:
            last = self._length() - 1
            start = last + 1 if after_seq is None else check_after_seq(after_seq, last + 1) + 1
            sub = Subscription(fn, start, self._read)
            self._subscriptions.append(sub)
        sub.catch_up(last)

        def unsubscribe() -> None:
            sub.close()
            if sub in self._subscriptions:
                self._subscriptions.remove(sub)

        return unsubscribe

    def events_since(self, seq: int) -> tuple[Mapping[str, Any], ...]:
        """The events after ``seq`` (-1: all), as read-only mappings: what a reader that has seen
        events up to ``seq`` missed. `UnknownSeqError` when the log has no event ``seq``."""
        with self._lock:
            n = self._length()
            return tuple(self._read(check_after_seq(seq, n) + 1, n))

    def committed(self, seq: int) -> None:
        """Deliver the events up to ``seq`` (just recorded) to every subscriber."""
        for sub in list(self._subscriptions):
            sub.catch_up(seq)


def check_after_seq(after_seq: int, length: int) -> int:
    """The seq a stream resumes after: -1 (from the start) up to the last event's seq."""
    if not isinstance(after_seq, int) or isinstance(after_seq, bool) or not -1 <= after_seq < length:
        raise UnknownSeqError(
            f"after_seq {after_seq!r}: the log has no such event (its seqs are 0..{length - 1}; "
            "-1 replays from the start): a stream resumes after a seq it has seen"
        )
    return after_seq


class LogFollower:
    """Reads a session file as its writer appends to it (``foldlog log tail --follow``): the
    events stored so far (a fork's with its parent's), then each complete line written after.

    Only complete lines are read — a line the writer is still writing waits for its newline —
    and every event is given once: a seq at or below the last one given is skipped.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        from foldlog import _core as _native
        from foldlog.log.forks import resolve_bytes

        self.path = Path(path)
        try:
            data = self.path.read_bytes()
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        self.offset = data.rfind(b"\n") + 1  # complete lines only
        full, _ = resolve_bytes(self.path, data[: self.offset])
        self._core, _info = _native.Log.parse(full, str(self.path), allow_empty=False)
        self.next_seq = len(self._core)

    def stored(self, start: int) -> list[bytes]:
        """The lines of the stored events from seq ``start`` (clamped to the log)."""
        start = min(max(start, 0), self.next_seq)
        return [ln for ln in self._core.event_lines(start, self.next_seq).split(b"\n") if ln]

    def poll(self) -> list[bytes]:
        """The complete event lines written since the last call (nothing new: an empty list)."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return []
        if size < self.offset:
            self.offset = size  # the writer cut a torn tail we never read (it was not complete)
            return []
        if size == self.offset:
            return []
        with open(self.path, "rb") as f:
            f.seek(self.offset)
            chunk = f.read(size - self.offset)
        end = chunk.rfind(b"\n") + 1
        self.offset += end
        out: list[bytes] = []
        for line in chunk[:end].split(b"\n"):
            line = line.strip()
            if not line:
                continue
            seq = seq_of(line)
            if seq is not None and seq < self.next_seq:
                continue
            if seq is not None:
                self.next_seq = seq + 1
            out.append(line)
        return out


def seq_of(line: bytes) -> int | None:
    import json

    try:
        event = json.loads(line)
    except ValueError:
        return None
    seq = event.get("seq") if isinstance(event, dict) else None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None
