"""Reading source transcripts: JSON lines and JSON documents with errors that name the place.

Large files get a progress bar on a terminal (rich, imported only then).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from foldlog.interchange.events import TranscriptError

# below this size a progress bar would only flicker
PROGRESS_MIN_BYTES = 4 * 1024 * 1024


def _show_progress(size: int) -> bool:
    if os.environ.get("FOLDLOG_PROGRESS") == "1":
        return True
    return size >= PROGRESS_MIN_BYTES and sys.stderr.isatty()


@contextmanager
def progress(path: Path, total: int) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n_bytes)``; draws a bar on stderr when it is a terminal and the file is big."""
    if not _show_progress(total):
        yield lambda _n: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn

    bar = Progress(
        TextColumn("importing {task.description}"),
        BarColumn(),
        DownloadColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task(path.name, total=total)
        yield lambda n: bar.advance(task, n)


def iter_jsonl(
    path: str | os.PathLike[str], what: str = "these transcripts"
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line_number, object)`` for each non-blank line; a bad line raises naming file and line.

    ``what`` names the format for the error a whole JSON document gets (``"Claude Code
    transcripts"``): a JSON array or a pretty-printed object fails on its first line, and saying
    "invalid JSON" there would hide that the file is valid JSON of the wrong kind."""
    p = Path(path)
    try:
        size = p.stat().st_size
        handle = p.open("rb")
    except OSError as exc:
        raise TranscriptError(f"cannot read: {exc.strerror or exc}", path=str(p)) from exc
    first = True
    with handle, progress(p, size) as advance:
        for number, raw in enumerate(handle, start=1):
            advance(len(raw))
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                if first:
                    _not_jsonl(raw, p, number, what)
                detail = exc.msg if isinstance(exc, json.JSONDecodeError) else "not UTF-8"
                raise TranscriptError(f"invalid JSON ({detail})", path=str(p), line=number) from None
            if not isinstance(obj, dict):
                if first:
                    _not_jsonl(raw, p, number, what)
                raise TranscriptError(
                    f"expected a JSON object per line, got {type(obj).__name__}", path=str(p), line=number
                )
            first = False
            yield number, obj


def _not_jsonl(first_line: bytes, path: Path, line: int, what: str) -> None:
    """Raise the error for a whole JSON document where JSON lines were expected (else return)."""
    text = first_line.strip()
    if text.startswith(b"["):  # never the start of a JSON line: those are objects
        shape = "a JSON array"
    elif text == b"{":  # a pretty-printed object (a damaged first line stays "invalid JSON")
        shape = "a JSON document spread over several lines"
    else:
        return
    raise TranscriptError(
        f"the file looks like {shape}, but {what} are JSONL: one JSON object per line "
        "(was it exported or pretty-printed? convert it back to one object per line)",
        path=str(path),
        line=line,
    )


def read_text(path: str | os.PathLike[str]) -> str:
    """A whole transcript as text; an unreadable or non-UTF-8 file is a `TranscriptError`
    naming it."""
    p = Path(path)
    try:
        return p.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"cannot read: {exc.strerror or exc}", path=str(p)) from exc
    except UnicodeDecodeError:
        raise TranscriptError("not UTF-8 text", path=str(p)) from None


def load_json(path: str | os.PathLike[str]) -> Any:
    """A whole JSON document; a syntax error names the file and line."""
    p = Path(path)
    text = read_text(p)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise TranscriptError(
            f"invalid JSON ({exc.msg}, column {exc.colno})", path=str(p), line=exc.lineno
        ) from None


def expect(cond: bool, message: str, path: str | os.PathLike[str], line: int | None) -> None:
    """Raise a :class:`TranscriptError` at ``path:line`` unless ``cond``."""
    if not cond:
        raise TranscriptError(message, path=str(path), line=line)


def need_dict(value: Any, message: str, path: str | os.PathLike[str], line: int | None) -> dict[str, Any]:
    """``value`` when it is a JSON object, else a :class:`TranscriptError` at ``path:line``."""
    if not isinstance(value, dict):
        raise TranscriptError(message, path=str(path), line=line)
    return value


def need_list(value: Any, message: str, path: str | os.PathLike[str], line: int | None) -> list[Any]:
    """``value`` when it is a JSON array, else a :class:`TranscriptError` at ``path:line``."""
    if not isinstance(value, list):
        raise TranscriptError(message, path=str(path), line=line)
    return value


def iso_ms(value: Any) -> int | None:
    """An ISO-8601 timestamp (``2026-02-12T15:52:46.085Z``) as epoch milliseconds; ``None`` when
    it is missing or not a timestamp (a source's times are kept where they can be read, never
    invented). A time without a zone is read as UTC."""
    if not isinstance(value, str) or not value:
        return None
    from datetime import UTC, datetime, timedelta

    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
