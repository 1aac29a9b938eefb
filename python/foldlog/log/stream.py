"""Reconnectable event streams: a subscriber that replays what it missed, then follows live.

A UI that loses its connection asks again with the last seq it saw
(`Session.subscribe(fn, after_seq=N)`, `Session.events_since(N)`) and gets every later event
once, in seq order: no gap, no duplicate, whatever the writer does meanwhile.

How: each subscription keeps the seq of the next event it owes (``next_seq``). Whoever may have
something new for it — the subscribe call replaying the past, every append after it commits —
calls `Subscription.catch_up(last)`, which delivers the events ``next_seq..last`` under the
subscription's own lock. An event is delivered by whichever call reaches it first and never
again, so a replay racing an append cannot skip or repeat one; the lock keeps deliveries in seq
order even when several threads append.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from foldlog.errors import UnknownSeqError

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


def check_after_seq(after_seq: int, length: int) -> int:
    """The seq a stream resumes after: -1 (from the start) up to the last event's seq."""
    if not isinstance(after_seq, int) or isinstance(after_seq, bool) or not -1 <= after_seq < length:
        raise UnknownSeqError(
            f"after_seq {after_seq!r}: the log has no such event (its seqs are 0..{length - 1}; "
            "-1 replays from the start): a stream resumes after a seq it has seen"
        )
    return after_seq
