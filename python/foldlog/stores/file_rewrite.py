"""The one rewrite of a session file: an erasure (docs/log-format.md, "Erasure").

The new bytes are made here from the file as it is — the header line kept as it was, the lines of
the erased events replaced by their tombstones, the erasure event appended — and the core's writer
puts them in place atomically, under the session's lock (`_core.FileWriter.rewrite`: a temporary
file beside it, fsync, rename, fsync of the folder). A reader sees the old file or the new one,
never a mix; a crash leaves one of them (and at most a stray ``<id>.jsonl.tmp``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from foldlog.errors import StorageError


def erased_file_bytes(
    data: bytes, base: int, tombstones: Mapping[int, bytes], erasure: bytes, erasure_seq: int, shown: str
) -> bytes:
    """``data`` (a session file: a header line, then one event per line, seqs ``base + 1`` on —
    ``base`` is -1 unless the file is a fork that reads its parent's events) with the lines of
    ``tombstones``' seqs replaced and ``erasure`` appended. `StorageError` when the file is not
    the log the erasure was planned on (a line's seq is not its place, the file does not end at
    ``erasure_seq - 1``)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    out: list[bytes] = []
    seq = base
    first = True
    for line in lines:
        is_header = first and b'"session"' in line and _seq_of(line) is None
        first = False
        if is_header or not line.strip():
            out.append(line)  # the header and blank lines stay as they are
            continue
        seq += 1
        new = tombstones.get(seq)
        if new is not None:
            if _seq_of(line) != seq:
                raise StorageError(
                    f"{shown}: line of event #{seq} holds seq {_seq_of(line)}: nothing was erased"
                )
            line = new
        out.append(line)
    if seq != erasure_seq - 1:
        raise StorageError(
            f"{shown}: the file ends at event #{seq}, the erasure expected #{erasure_seq - 1}: "
            "nothing was erased"
        )
    return b"\n".join(out) + b"\n" + erasure


def _seq_of(line: bytes) -> int | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    seq = event.get("seq") if isinstance(event, dict) else None
    return seq if type(seq) is int else None


__all__ = ["erased_file_bytes"]
