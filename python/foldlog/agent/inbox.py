"""The agent's inbox: one queue for every kind of input.

``followup`` opens a new turn and wakes the loop; ``steer`` joins the next step and wakes it;
``inject`` joins the next step but does not wake it (it waits for the next wake). Safe to call
from any thread.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

from foldlog.hooks import as_user_message

Kind = Literal["followup", "steer", "inject"]


class Inbox:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        # a list, not a deque: it holds a message or two, and an empty deque costs 760 bytes
        self._followups: list[dict[str, Any]] = []
        self._joining: list[dict[str, Any]] = []
        self._steering = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        with self._lock:
            if self._loop is not loop or self._wake is None:
                self._loop = loop
                self._wake = asyncio.Event()
                if self._followups or self._steering:
                    self._wake.set()
            return self._wake

    def unbind(self) -> None:
        """The agent went idle: nothing waits to be woken until the next `bind` (an idle agent
        holds little; an ``asyncio.Event`` costs about 1 KiB)."""
        with self._lock:
            self._loop, self._wake = None, None

    def put(self, kind: Kind, message: Any) -> None:
        msg = as_user_message(message, None if kind == "followup" else kind)
        with self._lock:
            if kind == "followup":
                self._followups.append(msg)
            else:
                self._joining.append(msg)
                if kind == "steer":
                    self._steering += 1
            wake = kind != "inject"
            loop, event = self._loop, self._wake
        if wake and loop is not None and event is not None and not loop.is_closed():
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is loop:
                event.set()
            else:
                loop.call_soon_threadsafe(event.set)

    def next_followup(self) -> dict[str, Any] | None:
        with self._lock:
            return self._followups.pop(0) if self._followups else None

    def claim(self) -> list[dict[str, Any]]:
        """Everything that joins the next step (steering and injected context), in arrival order."""
        with self._lock:
            out, self._joining, self._steering = self._joining, [], 0
            return out

    def has_followup(self) -> bool:
        with self._lock:
            return bool(self._followups)

    def has_steering(self) -> bool:
        with self._lock:
            return self._steering > 0

    def has_work(self) -> bool:
        with self._lock:
            return bool(self._followups) or self._steering > 0
