"""``foldlog log tail SESSION [--follow] [--from SEQ] [-n N]``: a log's events as JSONL lines.

Without ``--from`` the last ``N`` events; with it, every event from that seq on (a reader that
saw events up to ``S`` resumes with ``--from S+1``); a ``--from`` past that, without
``--follow``, is refused (exit 2) naming the log's last seq. ``--follow`` then polls the file and
prints each complete line the writer adds, until Ctrl-C or SIGTERM, which end it cleanly (exit 0).
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from typing import Any

from foldlog.cli.common import config_from_args, session_path
from foldlog.cli.exits import EXIT_OK, UsageError


def add_parser(log_verbs: Any) -> None:
    tail = log_verbs.add_parser("tail", help="print a log's events as JSON lines (and follow it)")
    tail.add_argument("session", metavar="PATH|ID")
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing events as they are written")
    tail.add_argument("--from", dest="from_seq", type=int, metavar="SEQ", help="start at this event's seq")
    tail.add_argument(
        "-n", "--lines", type=int, default=10, metavar="N", help="the last N events (default 10)"
    )
    tail.add_argument(
        "--interval",
        type=float,
        default=0.2,
        metavar="SECONDS",
        help="how often --follow looks (default 0.2)",
    )
    tail.set_defaults(func=cmd_tail)


def _write(lines: list[bytes]) -> None:
    if lines:
        out = sys.stdout.buffer
        out.write(b"\n".join(lines) + b"\n")
        out.flush()


def cmd_tail(args: argparse.Namespace) -> int:
    from foldlog.log.stream import LogFollower

    if args.from_seq is not None and args.from_seq < 0:
        raise UsageError(f"--from {args.from_seq}: a seq is 0 or more")
    if args.lines < 0:
        raise UsageError(f"-n {args.lines}: a count is 0 or more")
    if args.interval <= 0:
        raise UsageError(f"--interval {args.interval}: must be more than 0")
    path = session_path(args.session, config_from_args(args))
    # SIGTERM ends a follow cleanly. The handler only appends to a list: setting a
    # threading.Event from a signal handler deadlocks when the signal lands while the main
    # thread holds the Event's lock inside its own wait(). It is installed before anything is
    # said on stderr, so a caller that signals on seeing "waiting for seq" is always heard.
    stopping: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    try:
        follower = LogFollower(path)
        if args.from_seq is not None and args.from_seq > follower.next_seq:
            _beyond_the_end(path, args.from_seq, follower.next_seq, args.follow)
        start = args.from_seq if args.from_seq is not None else follower.next_seq - args.lines
        _write(follower.stored(start))
        while args.follow and not stopping:
            lines = follower.poll()
            if args.from_seq is not None:
                lines = [ln for ln in lines if _after(ln, args.from_seq)]
            _write(lines)
            _pause(args.interval, stopping)
    except KeyboardInterrupt:
        pass
    except BrokenPipeError:
        sys.stderr.close()  # the reader went away (| head): nothing more to say
    finally:
        signal.signal(signal.SIGTERM, previous)
    return EXIT_OK


def _pause(seconds: float, stopping: list[int]) -> None:
    """Sleep ``seconds`` in short naps, waking early once SIGTERM was heard."""
    end = time.monotonic() + seconds
    while not stopping and (left := end - time.monotonic()) > 0:
        time.sleep(min(left, 0.05))


def _beyond_the_end(path: object, from_seq: int, count: int, follow: bool) -> None:
    """``--from`` past the log's end. ``--from <count>`` (the resume after the last seq seen)
    prints nothing and is fine; further on, without ``--follow``, it is a mistake (a wrong seq,
    another log): it is refused, naming the last seq, rather than printing nothing with exit 0.
    With ``--follow`` the wait is said on stderr."""
    held = f"{path} has no events yet" if count == 0 else f"{path} has {count} events (last seq {count - 1})"
    if not follow:
        raise UsageError(
            f"--from {from_seq}: {held}; --from {count} resumes after the last one, "
            "--follow waits for later events"
        )
    print(f"foldlog: {held}; waiting for seq {from_seq}", file=sys.stderr, flush=True)


def _after(line: bytes, from_seq: int) -> bool:
    """Whether a followed line is at or after ``--from`` (a fresh log may start below it)."""
    from foldlog.log.stream import seq_of

    seq = seq_of(line)
    return seq is None or seq >= from_seq
