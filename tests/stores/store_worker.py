"""A separate process that uses a session store, driven by the store tests.

    python -m tests.stores.store_worker SPEC_JSON COMMAND ARGS_JSON    (from the repository root)

Talks JSON lines: answers on stdout, waits for lines on stdin where a command says so.
Commands:
  hold        open a writer, report {"ok", "holder"}, wait for a stdin line, close
  try-open    at wall time ``at``, try to open a writer; report {"ok"} or {"locked", "holder"};
              with ``wait``, a winner holds the lock until a stdin line comes
  append-kill open a writer, append ``batches`` batches reporting each commit, then wait for a stdin
              line and append one more (the test kills us while that one is in flight)
  steps       move sessions step by step: worker ``index`` of ``workers`` does step k of session i
              when (i + k) % workers == index, after step k - 1 is stored (retrying while locked)
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from foldlog.errors import SessionLockedError
from tests.stores.store_logdata import header_line, parse_log, step_batch


def say(**msg: Any) -> None:
    print(json.dumps(msg), flush=True)


def make_store(spec: dict[str, Any]) -> Any:
    if spec["kind"] == "postgres":
        from foldlog.stores.postgres import PostgresStore

        return PostgresStore(spec["dsn"], max_readers=1)
    from foldlog.stores.file import FileStore

    return FileStore(spec["root"])


def cmd_hold(store: Any, args: dict[str, Any]) -> None:
    writer = store.open_writer(args["session"], header_line(args["session"]))
    say(ok=True, holder=getattr(writer, "holder", None), pid=os.getpid())
    sys.stdin.readline()
    writer.close()


def cmd_try_open(store: Any, args: dict[str, Any]) -> None:
    delay = args["at"] - time.time()
    if delay > 0:
        time.sleep(delay)
    try:
        writer = store.open_writer(args["session"], header_line(args["session"]))
    except SessionLockedError as exc:
        say(locked=True, holder=exc.holder, message=str(exc), pid=os.getpid())
        return
    say(ok=True, holder=getattr(writer, "holder", None), pid=os.getpid())
    if args.get("wait"):
        sys.stdin.readline()  # hold the lock until the test says so
    writer.close()


def cmd_append_kill(store: Any, args: dict[str, Any]) -> None:
    sid = args["session"]
    writer = store.open_writer(sid, header_line(sid))
    say(ok=True, holder=getattr(writer, "holder", None), pid=os.getpid())
    seq = 0
    n_steps = args["batches"] + 1
    for step in range(args["batches"]):
        lines, count = step_batch(seq, step, n_steps, "victim")
        writer.append(lines, seq, count)
        seq += count
        say(committed=seq - 1)
    sys.stdin.readline()
    lines, count = step_batch(seq, args["batches"], n_steps, "victim")
    writer.append(lines, seq, count)
    say(committed=seq + count - 1)  # reached only if the test did not kill us


def cmd_steps(store: Any, args: dict[str, Any]) -> None:
    index, workers, n_steps = args["index"], args["workers"], args["steps"]
    sessions: list[str] = args["sessions"]
    retries = 0
    deadline = time.time() + args.get("timeout", 120)
    for step in range(n_steps):
        for i, sid in enumerate(sessions):
            if (i + step) % workers != index:
                continue
            while True:
                if time.time() > deadline:
                    raise SystemExit(f"worker {index}: timed out waiting for {sid} step {step}")
                try:
                    writer = store.open_writer(sid, header_line(sid))
                except SessionLockedError:
                    retries += 1
                    time.sleep(0.005)
                    continue
                try:
                    _, events = parse_log(writer.read_log())
                    done = sum(1 for e in events if e["type"] == "step/end")
                    if done == step:
                        lines, count = step_batch(len(events), step, n_steps, f"worker {index}")
                        writer.append(lines, len(events), count)
                        break
                    if done > step:
                        raise SystemExit(f"worker {index}: {sid} already has step {step}")
                finally:
                    writer.close()
                retries += 1  # the previous step's worker has not been here yet
                time.sleep(0.005)
    say(ok=True, retries=retries)


COMMANDS = {"hold": cmd_hold, "try-open": cmd_try_open, "append-kill": cmd_append_kill, "steps": cmd_steps}


def main() -> None:
    spec, command, args = json.loads(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
    store = make_store(spec)
    try:
        COMMANDS[command](store, args)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


if __name__ == "__main__":
    main()
