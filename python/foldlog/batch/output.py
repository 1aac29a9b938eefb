"""Where a job's rows go: the done-list beside the output (so a re-run skips what is done) and
the table itself (Parquet, CSV or JSON lines, by the output's suffix).

The done-list (``<OUT>.done.jsonl``) starts with a line naming the job it belongs to, then one
line per finished item — ``{"key": …, "rows": […]}`` — appended and flushed as each shard comes
back. An item whose rows hold an error is run again by the next run; a torn last line (a run
killed mid-write) is ignored. The table is written whole at the end, rows in source order, so
every engine writes the same file.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from foldlog.errors import ConfigError

TABLE_SUFFIXES = (".parquet", ".csv", ".jsonl")
LEADING = ("source", "index", "session", "error")


def done_list_path(table: Path) -> Path:
    return table.with_name(table.name + ".done.jsonl")


class DoneList:
    """The finished items of a job at ``path``, read once, then appended to shard by shard."""

    def __init__(self, path: Path, fingerprint: Mapping[str, Any]) -> None:
        self.path = path
        self.fingerprint = dict(fingerprint)
        self.rows: dict[str, list[dict[str, Any]]] = {}
        self._file: IO[str] | None = None
        if path.exists():
            self._read()

    def _read(self) -> None:
        with self.path.open(encoding="utf-8") as f:
            lines = f.read().splitlines()
        if not lines:
            return
        try:
            head = json.loads(lines[0])
        except ValueError:
            head = None
        if not isinstance(head, dict) or head.get("job") != self.fingerprint:
            raise ConfigError(
                f"{self.path} is the done-list of another job or grid ({_describe(head)}); "
                "remove it (and the output) or write to another output"
            )
        for line in lines[1:]:
            try:
                entry = json.loads(line)
            except ValueError:
                continue  # a torn last line: that item runs again
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                self.rows[entry["key"]] = list(entry.get("rows") or [])

    def done(self, key: str) -> bool:
        """Finished without an error (an item with an error row runs again)."""
        rows = self.rows.get(key)
        return rows is not None and all(r.get("error") is None for r in rows)

    def add(self, results: Iterable[tuple[str, list[dict[str, Any]]]]) -> None:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fresh = not self.path.exists() or self.path.stat().st_size == 0
            self._file = self.path.open("a", encoding="utf-8")
            if fresh:
                self._file.write(json.dumps({"job": self.fingerprint}) + "\n")
        for key, rows in results:
            self.rows[key] = rows
            self._file.write(json.dumps({"key": key, "rows": rows}, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _describe(head: Any) -> str:
    job = head.get("job") if isinstance(head, dict) else None
    return f"job {job.get('job')!r}" if isinstance(job, dict) else "not a done-list"


def check_table_path(path: Path) -> None:
    if path.suffix not in TABLE_SUFFIXES:
        raise ConfigError(
            f"output {path}: the table is written as {', '.join(TABLE_SUFFIXES)} (by its suffix)"
        )
    if path.suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise ConfigError(
                "Parquet output needs pyarrow: pip install 'foldlog[ray]' (or pyarrow)"
            ) from None


def columns(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The leading columns, then every other key in the order rows first show it."""
    seen = dict.fromkeys(LEADING)
    for row in rows:
        for key in row:
            seen.setdefault(key)
    return list(seen)


def write_table(path: Path, rows: Sequence[Mapping[str, Any]]) -> None:
    """Write ``rows`` whole (a temporary file renamed over ``path``), missing cells as nulls."""
    cols = columns(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table({c: [r.get(c) for r in rows] for c in cols})
        pq.write_table(table, tmp)
    elif path.suffix == ".csv":
        with tmp.open("w", encoding="utf-8", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=cols, restval="")
            writer.writeheader()
            for row in rows:
                writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
    else:
        with tmp.open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps({c: row.get(c) for c in cols}, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def read_table(path: Path) -> list[dict[str, Any]]:
    """The rows of a table this module wrote (tests and tools read results back with it)."""
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_table(path).to_pylist())
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as f:
            return [dict(r) for r in csv.DictReader(f)]
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


__all__ = [
    "TABLE_SUFFIXES",
    "DoneList",
    "check_table_path",
    "columns",
    "done_list_path",
    "read_table",
    "write_table",
]
