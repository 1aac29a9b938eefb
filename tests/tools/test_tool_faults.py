"""Tools that misbehave for real: hang, ignore cancellation, print 100 MB, emit invalid UTF-8.

Every fault is injected as it happens in the field (a blocked thread, a real subprocess tree, a
real pipe carrying 100 MB); the loop must log an error or bounded result and go on.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from foldlog import Agent, Options, Session, ToolRegistry, tool
from foldlog.log.grammar.types import ToolCall
from foldlog.providers import Scripted
from foldlog.tools.builtin import builtin_tools
from foldlog.tools.host import ToolLimits
from foldlog.tools.output import MARKER_SLACK, HeadTail, cap_text, clean_text
from foldlog.tools.runner import CANCEL_GRACE, ToolRunner
from tests.agent.agent_helpers import call, of_type, reply

LIMIT = 32768  # Options().tool_output_limit


def results(session: Session) -> list[dict[str, Any]]:
    return [dict(e["data"]) for e in of_type(session, "tool/result")]


def group_members(pgid: int) -> list[str]:
    """Processes (zombies included) whose process group is ``pgid``, as ``pid:state``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue  # exited while we looked
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:
            found.append(f"{name}:{fields[0]}")
    return found


def wait_group_gone(pgid: int, within: float = 10.0) -> list[str]:
    # killed children are reparented to init, which reaps them a moment later
    deadline = time.monotonic() + within
    while (left := group_members(pgid)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """An event the blocked sync tools wait on; set at teardown so no thread outlives the test."""
    ev = threading.Event()
    yield ev
    ev.set()


# --- hanging tools -----------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_hanging_tools_time_out_into_error_results_and_the_loop_goes_on(
    session: Session, released: threading.Event
) -> None:
    @tool
    async def never() -> str:
        await asyncio.Event().wait()  # never set
        return "unreachable"

    @tool
    def blocked() -> str:
        released.wait()  # a sync call that never returns (until teardown)
        return "unreachable"

    @tool(timeout=0.2)  # its own timeout wins over Options.tool_timeout
    def slow_own() -> str:
        released.wait()
        return "unreachable"

    p = Scripted(
        [
            reply("", call("never", id="a"), call("blocked", id="b")),
            reply("", call("slow_own", id="c")),
            reply("done"),
        ]
    )
    t0 = time.monotonic()
    answer = Agent(p, [never, blocked, slow_own], session, Options(tool_timeout=0.3)).run_sync("x")
    took = time.monotonic() - t0
    assert answer == "done"
    got = [
        (r["message"]["toolCallId"], r["message"]["content"], r["message"]["isError"])
        for r in results(session)
    ]
    assert got == [
        ("a", "error: never timed out after 0.3s", True),
        ("b", "error: blocked timed out after 0.3s", True),
        ("c", "error: slow_own timed out after 0.2s", True),
    ]
    # run_sync returned although two sync tools still block: they run on daemon threads, which
    # asyncio.run does not wait for (a default-executor thread would hold it until released)
    assert took < 10
    blocked_threads = [t for t in threading.enumerate() if t.name.startswith("foldlog-tool-")]
    assert {t.name for t in blocked_threads} == {"foldlog-tool-blocked", "foldlog-tool-slow_own"}
    assert all(t.daemon for t in blocked_threads)
    assert of_type(session, "turn/end")[-1]["data"]["reason"]["kind"] == "completed"


@pytest.mark.timeout(60)
def test_async_tool_ignoring_cancellation_is_abandoned_after_the_grace() -> None:
    cancels: list[float] = []
    stop = False

    @tool
    async def stubborn() -> str:
        while not stop:  # swallows cancellation until the test lets it go
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancels.append(time.monotonic())
        return "late"

    runner = ToolRunner(
        ToolRegistry([stubborn]), None, None, ToolLimits(max_parallel=1, output_limit=100, timeout=0.2)
    )
    loop = asyncio.new_event_loop()
    try:
        t0 = time.monotonic()
        [r] = loop.run_until_complete(runner.run_batch([ToolCall("c", "stubborn", "{}")]))
        took = time.monotonic() - t0
        assert (r.content, r.is_error) == ("error: stubborn timed out after 0.2s", True)
        assert len(cancels) == 1 and 0.2 <= cancels[0] - t0 < 1.0
        assert took < 0.2 + CANCEL_GRACE + 1.0  # the timeout, the grace, and no more
        # asyncio.run would wait for the abandoned task at shutdown: let it end
        stop = True
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    finally:
        loop.close()


def bash_runner(root: Path, timeout: float | None = None, limit: int = 4096) -> Any:
    runner = ToolRunner(
        ToolRegistry(builtin_tools(root, bash=True)),
        None,
        None,
        ToolLimits(max_parallel=8, output_limit=limit, timeout=timeout),
    )

    def run(command: str, **args: Any) -> Any:
        [r] = asyncio.run(runner.run_batch([ToolCall("c", "bash", json.dumps({"command": command, **args}))]))
        return r

    return run


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process groups from /proc")
@pytest.mark.timeout(60)
@pytest.mark.parametrize("via", ["bash timeout", "runner timeout"])
def test_hanging_command_is_killed_with_its_whole_process_group(tmp_path: Path, via: str) -> None:
    # a foreground sleep, a background child that ignores SIGTERM and a grandchild of it
    ws = tmp_path / "ws"
    ws.mkdir()
    command = "echo $$ > pgid; sh -c 'trap \"\" TERM; sleep 1000 & exec sleep 1000' & sleep 1000"
    if via == "bash timeout":
        r = bash_runner(ws)(command, timeout=0.5)
        assert r.content.startswith("error: command timed out after 0.5s; its process group was killed")
    else:
        r = bash_runner(ws, timeout=0.5)(command)
        assert r.content == "error: bash timed out after 0.5s"
    assert r.is_error
    pgid = int((ws / "pgid").read_text())
    assert wait_group_gone(pgid) == []


def running_with_arg(arg: str) -> list[str]:
    """Live (not zombie) processes whose command line contains ``arg``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if arg in cmdline and state != "Z":
            found.append(f"{name}: {cmdline}")
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.timeout(60)
@pytest.mark.parametrize("when", ["while starting", "while running"])
def test_cancelled_command_leaves_no_process(tmp_path: Path, when: str) -> None:
    # a duration no other process uses: finds the command's sleeps whatever their group
    arg = str(900_000 + os.getpid() % 10_000 * 10 + (when == "while running"))

    async def go() -> None:
        runner = ToolRunner(
            ToolRegistry(builtin_tools(tmp_path, bash=True)),
            None,
            None,
            ToolLimits(max_parallel=8, output_limit=4096, timeout=None),
        )
        args = json.dumps({"command": f"echo started > started; sleep {arg} & sleep {arg}"})
        task = asyncio.ensure_future(runner.run_batch([ToolCall("c", "bash", args)]))
        if when == "while starting":
            await asyncio.sleep(0)  # the spawn is under way, its handle not yet returned
        else:
            while not (tmp_path / "started").exists():
                await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    deadline = time.monotonic() + 10
    while (left := running_with_arg(arg)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert left == []


# --- huge output -------------------------------------------------------------------------------


@pytest.mark.timeout(120)
def test_bash_printing_100_mb_keeps_head_and_tail_in_bounded_memory(tmp_path: Path, session: Session) -> None:
    command = "printf BEGIN; head -c 100000000 /dev/zero | tr '\\0' x; printf END"
    p = Scripted([reply("", call("bash", {"command": command})), reply("ok")])
    agent = Agent(p, builtin_tools(tmp_path, bash=True), session)
    tracemalloc.start()
    try:
        agent.run_sync("x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    [r] = results(session)
    content = r["message"]["content"]
    total = 100_000_000 + len("BEGIN") + len("END")
    assert r["meta"] == {"omittedBytes": total - LIMIT}  # capped once, by the tool, exactly
    assert content.startswith("exit code 0\nBEGINxxx") and content.endswith("xxxEND")
    assert f"[… {total - LIMIT} bytes of tool output omitted …]" in content
    assert len(content.encode()) <= LIMIT + MARKER_SLACK + len("exit code 0\n")
    # the pipe is read piece by piece: a few MB at most, never the 100 MB
    assert peak < 8 * 1024 * 1024, f"peak traced memory {peak} bytes"


@pytest.mark.timeout(60)
def test_python_tool_returning_100_mb_is_capped_before_the_log(tmp_path: Path) -> None:
    huge = "é" * 50_000_000  # 100 MB of UTF-8 (50 MB in memory)

    @tool
    def dump() -> str:
        return huge

    session = Session.open(tmp_path / "s.jsonl")
    p = Scripted([reply("", call("dump")), reply("ok")])
    tracemalloc.start()
    try:
        Agent(p, [dump], session).run_sync("x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    session.close()
    [r] = results(Session.load(tmp_path / "s.jsonl"))
    content = r["message"]["content"]
    assert r["meta"] == {"omittedBytes": 100_000_000 - LIMIT}
    assert content.startswith("é" * (LIMIT // 4)) and content.endswith("é" * (LIMIT // 4))
    assert len(content.encode()) <= LIMIT + MARKER_SLACK
    assert (tmp_path / "s.jsonl").stat().st_size < 10 * LIMIT
    # measuring and cutting it encodes only pieces of it, never the whole string
    assert peak < 16 * 1024 * 1024, f"peak traced memory {peak} bytes"


def test_bytes_from_a_tool_are_capped_before_decoding() -> None:
    @tool
    def blob() -> bytes:
        return b"\xff" + b"y" * 5_000_000 + "é".encode()

    runner = ToolRunner(
        ToolRegistry([blob]), None, None, ToolLimits(max_parallel=1, output_limit=1000, timeout=None)
    )
    [r] = asyncio.run(runner.run_batch([ToolCall("c", "blob", "{}")]))
    assert isinstance(r.content, str)
    assert r.content.startswith("\ufffdyyy") and r.content.endswith("yyé")
    assert r.meta == {"omittedBytes": 5_000_003 - 1000, "utf8Replaced": 1}


# --- invalid UTF-8 -----------------------------------------------------------------------------


def test_invalid_utf8_is_replaced_and_recorded_in_the_log(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "latin1.txt").write_bytes("café\n".encode("latin-1"))

    @tool
    def raw() -> bytes:
        return b"ok \xff\xfe end \xef\xbf\xbd"  # two bad bytes, and one real U+FFFD

    @tool
    def fsname() -> str:
        return os.fsdecode(b"name-\xff.txt")  # a lone surrogate: no UTF-8 encoder accepts it

    @tool
    def clean() -> str:
        return "fine \ufffd"

    session = Session.open(tmp_path / "s.jsonl")
    calls = [
        call("raw", id="a"),
        call("fsname", id="b"),
        call("clean", id="c"),
        call("bash", {"command": "printf 'a\\377b\\n'"}, id="d"),
        call("read_file", {"path": "latin1.txt"}, id="e"),
    ]
    p = Scripted([reply("", *calls), reply("ok")])
    tools = [raw, fsname, clean, *builtin_tools(tmp_path / "ws", bash=True)]
    assert Agent(p, tools, session).run_sync("x") == "ok"
    session.close()
    got = {
        r["message"]["toolCallId"]: (r["message"]["content"], r.get("meta"))
        for r in results(Session.load(tmp_path / "s.jsonl"))
    }
    assert got == {
        "a": ("ok \ufffd\ufffd end \ufffd", {"utf8Replaced": 2}),
        "b": ("name-\ufffd.txt", {"utf8Replaced": 1}),
        "c": ("fine \ufffd", None),
        "d": ("exit code 0\na\ufffdb\n", {"utf8Replaced": 1}),
        "e": ("caf\ufffd\n", {"utf8Replaced": 1}),
    }


# --- arguments over the limit ------------------------------------------------------------------


def test_arguments_over_the_limit_are_an_error_result_and_the_tool_does_not_run() -> None:
    ran: list[int] = []

    @tool
    def put(text: str) -> str:
        ran.append(len(text))
        return "stored"

    runner = ToolRunner(
        ToolRegistry([put]),
        None,
        None,
        ToolLimits(max_parallel=1, output_limit=1000, timeout=None, argument_limit=1000),
    )
    small = json.dumps({"text": "é" * 100})
    big = json.dumps({"text": "é" * 600}, ensure_ascii=False)  # 600 chars, 1200+ bytes
    out = asyncio.run(runner.run_batch([ToolCall("a", "put", small), ToolCall("b", "put", big)]))
    assert out[0].content == "stored" and not out[0].is_error
    size = len(big.encode())
    assert isinstance(out[1].content, str)
    assert out[1].is_error and out[1].content.startswith(
        f"error: the arguments for put are {size} bytes, over the limit of 1000 bytes"
    )
    assert ran == [100]


# --- the output bound itself -------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    data=st.binary(max_size=400) | st.text(max_size=150).map(lambda t: t.encode()),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=6),
    limit=st.integers(min_value=2, max_value=120),
)
def test_head_tail_is_the_same_whatever_the_pieces(data: bytes, cuts: list[int], limit: int) -> None:
    whole = HeadTail(limit)
    whole.feed(data)
    pieces = HeadTail(limit)
    bounds = [0, *sorted(c for c in cuts if c <= len(data)), len(data)]
    for a, b in itertools.pairwise(bounds):
        pieces.feed(data[a:b])
    text, omitted, replaced = pieces.render()
    assert (text, omitted, replaced) == whole.render()
    if omitted:
        head, _, tail = text.partition(f"\n\n[… {omitted} bytes of tool output omitted …]\n\n")
        if not replaced:  # (a replacement character is 3 bytes standing for 1)
            assert data.startswith(head.encode()) and data.endswith(tail.encode())
            assert len(head.encode()) <= limit // 2 and len(tail.encode()) <= limit // 2
            assert len(head.encode()) + omitted + len(tail.encode()) == len(data)
    else:
        assert text == data.decode("utf-8", errors="replace")


@given(text=st.text(max_size=300), limit=st.integers(min_value=4, max_value=200))
def test_cap_text_is_idempotent_and_keeps_characters_whole(text: str, limit: int) -> None:
    once, omitted = cap_text(text, limit)
    assert cap_text(once, limit) == (once, 0)  # a second cap with the same limit changes nothing
    once.encode()  # valid text: no character was cut in half
    if omitted:
        assert len(text.encode()) > limit + MARKER_SLACK
        kept = len(once.encode()) - len(f"\n\n[… {omitted} bytes of tool output omitted …]\n\n".encode())
        assert kept + omitted == len(text.encode())


def test_clean_text_counts_only_lone_surrogates() -> None:
    assert clean_text("plain") == ("plain", 0)
    assert clean_text("é \ufffd 😀") == ("é \ufffd 😀", 0)
    assert clean_text("a\ud800b\udfffc") == ("a\ufffdb\ufffdc", 2)
