"""A server's stderr: read on a thread of its own, sent to ``logging``, its tail kept.

The console is the user's; a server's diagnostics never reach it. Each line goes to the logger
``foldlog.mcp.<server>`` (at INFO; bytes that are not UTF-8 are replaced), and the last lines
are kept for the error of a server that cannot start.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
from typing import IO

TAIL_LINES = 40
LINE_LIMIT = 2000  # characters of one logged line (a flood of one huge line stays bounded)


class StderrPipe:
    """The write end goes to the server process; the reader logs what comes out the other."""

    def __init__(self, server: str) -> None:
        self.log = logging.getLogger(f"foldlog.mcp.{server}")
        self.tail: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)
        self.lines = 0
        read_fd, write_fd = os.pipe()
        self.writer: IO[str] | None = os.fdopen(write_fd, "w")
        self._reader = os.fdopen(read_fd, "rb")
        self._thread = threading.Thread(target=self._pump, name=f"foldlog-mcp-{server}-stderr", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.decode("utf-8", errors="replace").rstrip("\r\n")[:LINE_LIMIT]
                self.lines += 1
                self.tail.append(line)
                self.log.info("%s", line)

    def close_writer(self) -> None:
        """Drop this process's copy of the write end (the server keeps its own): the reader
        ends when the server does."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def text(self, wait: float = 0.0) -> str:
        """The last lines (after waiting up to ``wait`` s for the reader to reach the end)."""
        if wait:
            self._thread.join(wait)
        return "\n".join(self.tail)


__all__ = ["StderrPipe"]
