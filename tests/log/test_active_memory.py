"""What an active session holds (issue 17.3: "while active, at most 2× its log bytes"), measured
as `benches/bench_volume.py` (B10's "active bytes / log bytes") does: the core's heap
(`Log.heap_bytes()`) and the Python allocations left alive by counting and building a request
body (tracemalloc). Memory ratios, not times: the bounds hold on any machine."""

from __future__ import annotations

import gc
import re
import tracemalloc
import zlib
from pathlib import Path

from foldlog import Session, _core
from foldlog.log.wire import chunked_body
from tests.support.history import noop_turn, read_file_history

MODEL = "deepseek-chat"
STEPS = 20


def _tool_session() -> Session:
    """A 20-step tool session: a question, 20 calls with 520-byte results, the answer."""
    return read_file_history(STEPS)


def _turn_session() -> Session:
    """A finished 20-step turn as B10 holds them: the turn and step events around small messages."""
    s = Session(system="You are a careful agent.")
    noop_turn(s, STEPS)
    return s


def _loaded(s: Session) -> Session:
    again = Session.from_bytes(s._core.to_bytes())
    again.model = MODEL
    return again


def test_counting_a_loaded_log_does_not_copy_its_lines() -> None:
    """Counting used to write each count into its event's line even when the line was a span of
    the loaded log's buffer: every message line was copied while the buffer stayed alive."""
    for session in (_turn_session(), _tool_session()):
        s = _loaded(session)
        log_bytes = len(s._core.to_bytes())
        before = s._core.heap_bytes()
        assert s.token_count(MODEL).exact
        grown = s._core.heap_bytes() - before
        assert grown <= 0.1 * log_bytes, (
            f"counting grew the heap by {grown} bytes ({grown / log_bytes:.2f}× the log)"
        )
        # the counts are kept (in memory): asked again, nothing is counted
        assert _core.cached_token_events(s._core) == len(s.derive_messages())


def test_counts_of_new_events_still_travel_in_their_lines() -> None:
    s = _tool_session()
    s.model = MODEL
    s.token_count(MODEL)
    lines = s._core.to_bytes().decode().splitlines()
    assert all('"tokens":{"deepseek-v4":' in line for line in lines if '"surfaceOp"' in line)


def _active_ratio(s: Session) -> float:
    """(core heap + Python allocations left alive) / log bytes, with the session counted and a
    request body built and alive; the Python side must hold next to nothing."""
    log_bytes = len(s._core.to_bytes())
    s.token_count(MODEL)  # the tokenizer loads once per process
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        s.token_count(MODEL)
        body = chunked_body(s.wire_request("keep"), {"model": MODEL, "stream": True})
        gc.collect()
        python = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    core = s._core.heap_bytes()
    assert len(body) > 0
    assert python <= 0.02 * log_bytes, python
    return (core + python) / log_bytes


def test_an_active_session_holds_little_more_than_twice_its_log() -> None:
    """Log lines (1×) + per-event bookkeeping + the request's serialised messages, kept for
    incremental bodies: 1.55× measured, since those messages borrow their long texts from the
    log's buffer (they held a copy: 2.29×; 1.79× before the bookkeeping shrank)."""
    ratio = _active_ratio(_loaded(_tool_session()))
    assert ratio <= 2.0, f"{ratio:.2f}× the log"


def test_an_active_session_of_short_messages_holds_at_most_twice_its_log() -> None:
    """Short messages have no long text to borrow: what the session holds beside its lines is
    bookkeeping per event and the serialised messages. 2.62× measured before issue 31.3 (an
    event 80 bytes, a shape 64, a cached segment slot of 24 bytes for every event, the format's
    keys copied into each serialised message); 1.95× since (events 56 bytes with their shape and
    rare fields behind one pointer, no slot per event, short messages kept packed)."""
    ratio = _active_ratio(_loaded(_turn_session()))
    assert ratio <= 2.0, f"{ratio:.2f}× the log"


def test_a_counted_loaded_log_keeps_its_counts_when_saved_or_released(tmp_path: Path) -> None:
    """The counts of a loaded log's events are kept in memory, and written into their lines with
    the log's bytes: saved, or released and loaded again, nothing is counted a second time (each
    count read back is changed by 1000 in the bytes first, and the total follows)."""
    s = _loaded(_turn_session())
    count = s.token_count(MODEL)
    path = tmp_path / "counted.jsonl"
    s.save(path)
    text = path.read_text()
    lines = text.splitlines()
    counted = [line for line in lines if '"surfaceOp"' in line]
    assert counted and all('"tokens":{"deepseek-v4":' in line for line in counted)
    first = re.search(r'"tokens":\{"deepseek-v4":(\d+)\}', text)
    assert first is not None
    changed = text.replace(first.group(0), f'"tokens":{{"deepseek-v4":{int(first.group(1)) + 1000}}}', 1)
    path.write_text(changed)
    resumed = Session.load(path)
    assert resumed.token_count(MODEL) == count + 1000, "read from the saved lines"
    s.release()
    assert s._released is not None and b'"deepseek-v4"' in zlib.decompress(s._released)
    s._released = zlib.compress(changed.encode())
    assert s.token_count(MODEL) == count + 1000, "read from the released bytes"
