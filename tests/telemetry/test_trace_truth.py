"""Traces that tell the truth: an imported sub-agent (a log whose header names its parent and the
call it answers) is traced under that call, and a collector that cannot be reached is an error
naming it, in seconds, with the exporter's retries logged rather than printed."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from foldlog import Session
from foldlog.errors import TraceExportError
from foldlog.telemetry import export_session
from foldlog.telemetry.otlp import send_spans
from tests.cli.cli_testlib import run_cli
from tests.conftest import shared_path
from tests.telemetry.otel_helpers import decoded_spans, memory_provider, otlp_receiver, spans

SPOTTER = "claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CHILD_CALL = "toolu_01VmaERAwhb19LGUwu9GenaK"


def _imported(tmp_path: Path) -> Path:
    out = tmp_path / "logs"
    done = run_cli(
        "log",
        "import",
        "--from",
        "claude-code",
        str(shared_path("corpus", SPOTTER)),
        "-o",
        f"{out}/",
        home=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return out / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"


def test_an_imported_subagent_is_traced_under_the_call_that_started_it(tmp_path: Path) -> None:
    path = _imported(tmp_path)
    provider, exporter = memory_provider()
    assert export_session(path, provider) == 1
    found = spans(exporter)
    by_id = {s.context.span_id: s for s in found}
    child_id = "258c7280-ae70-4798-800f-63464d01a85d.agent-a881341"
    child = [s for s in found if (s.attributes or {}).get("gen_ai.conversation.id") == child_id]
    assert len(child) == 6  # its turn, 3 requests, 2 tool calls
    [turn] = [s for s in child if s.name == "invoke_agent"]
    assert turn.parent is not None
    task = by_id[turn.parent.span_id]
    assert task.name == "execute_tool Task" and (task.attributes or {})["gen_ai.tool.call.id"] == CHILD_CALL
    assert (turn.attributes or {})["foldlog.parent_session.id"] == "258c7280-ae70-4798-800f-63464d01a85d"
    assert len({s.context.trace_id for s in found if s.parent is None or s in child}) >= 1
    assert turn.context.trace_id == task.context.trace_id


def test_a_subagent_whose_call_has_no_result_still_nests_under_the_call(tmp_path: Path) -> None:
    parent = Session(id="p", system="s")
    parent.add({"role": "user", "content": "delegate"})
    call = {"id": "c9", "type": "function", "function": {"name": "task", "arguments": "{}"}}
    parent.append_event("turn/start", {"turn": 0})
    parent.append_event(
        "tool/call", {"turn": 0, "step": 0, "callId": "c9", "name": "task", "arguments": "{}"}
    )
    parent.add({"role": "assistant", "content": "", "tool_calls": [call]})
    parent.save(tmp_path / "p.jsonl")
    child = Session(id="p.agent-x", parent={"kind": "subagent", "id": "p", "callId": "c9"})
    child.append_event("turn/start", {"turn": 0})
    child.add({"role": "user", "content": "the part"})
    child.append_event("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
    child.save(tmp_path / "p.agent-x.jsonl")
    provider, exporter = memory_provider()
    assert export_session(tmp_path / "p.jsonl", provider) == 1
    found = spans(exporter)
    by_id = {s.context.span_id: s for s in found}
    [turn] = [s for s in found if (s.attributes or {}).get("gen_ai.conversation.id") == "p.agent-x"]
    assert turn.parent is not None and by_id[turn.parent.span_id].name == "execute_tool task"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_cli_trace_to_an_unreachable_collector_fails_in_seconds_naming_it(tmp_path: Path) -> None:
    path = _imported(tmp_path)
    url = f"http://127.0.0.1:{_closed_port()}/v1/traces"
    started = time.monotonic()
    out = run_cli("log", "trace", str(path), "--otlp", url, "--timeout", "2", home=tmp_path)
    elapsed = time.monotonic() - started
    assert out.returncode == 1, (out.stdout, out.stderr)
    assert f"the OTLP collector at {url} did not take the 349 span(s) within 2 s" in out.stderr
    assert "sent" not in out.stdout and "Traceback" not in out.stderr
    # the exporter's retry messages are logged, not printed: one line of error, nothing else
    assert out.stderr.strip().count("\n") == 0, out.stderr
    assert elapsed < 15, elapsed


def test_send_spans_logs_the_retries_and_raises_naming_the_collector(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    provider, exporter = memory_provider()
    session = Session(id="one", system="s")
    session.append_event("turn/start", {"turn": 0})
    session.append_event("turn/end", {"turn": 0, "reason": {"kind": "completed"}})
    export_session(session, provider)
    url = f"http://127.0.0.1:{_closed_port()}/v1/traces"
    with caplog.at_level(logging.INFO, logger="foldlog.telemetry"):
        started = time.monotonic()
        with pytest.raises(TraceExportError, match=f"collector at {url}") as err:
            send_spans(spans(exporter), url, timeout=1.5)
        assert time.monotonic() - started < 10
    assert isinstance(err.value, ConnectionError)
    assert any("retrying" in r.getMessage() for r in caplog.records if r.name == "foldlog.telemetry")
    with otlp_receiver() as (endpoint, received):
        assert send_spans(spans(exporter), endpoint) == 1
    assert len(decoded_spans(received)) == 1


def test_the_cli_sends_every_span_in_one_request(tmp_path: Path) -> None:
    path = _imported(tmp_path)
    with otlp_receiver() as (endpoint, received):
        out = subprocess.run(
            [sys.executable, "-m", "foldlog", "log", "trace", str(path), "--otlp", endpoint],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert out.returncode == 0, out.stderr
    assert "sent 349 span(s)" in out.stdout and "(1 sub-agent log(s))" in out.stdout
    assert len(received) == 1 and len(decoded_spans(received)) == 349
