"""Resident memory of this process, as the memory rows (B7, B10) measure it."""

from __future__ import annotations

import ctypes
import gc
import os


def rss_bytes() -> int:
    """Resident set size now (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def settled_rss() -> int:
    """RSS after a full collection and after the allocator has handed its free pages back to the
    system (``malloc_trim``): what the live objects hold, not what the heap once reached."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: RSS as it is
    return rss_bytes()


def peak_rss() -> int:
    """The highest RSS of this process so far (``VmHWM``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return rss_bytes()
