"""A real OTLP/HTTP export: the official exporter sends a session's spans to a receiver started
here on 127.0.0.1, which decodes the protobuf; and the CLI's ``foldlog log trace``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from foldlog import Agent, Options, Session, tool
from foldlog.agent.subagent import task_tool
from foldlog.providers import Scripted
from foldlog.telemetry import export_session
from tests.agent.agent_helpers import call, reply
from tests.telemetry.otel_helpers import attribute_map, decoded_spans, otlp_receiver


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key}"


def _recorded_session(folder: Path) -> Path:
    path = folder / "traced.jsonl"
    session = Session.open(path, system="s")
    p = Scripted(
        [
            reply("", call("task", {"prompt": "find k"}, "t1")),
            reply("", call("lookup", {"key": "k"}, "c1")),
            reply("the value is value-of-k"),
            reply("done"),
        ]
    )
    Agent(p, [lookup, task_tool()], session, Options(max_steps=10)).run_sync("what is k?")
    session.close()
    return path


def test_the_official_exporter_sends_the_spans_over_otlp_http(tmp_path: Path) -> None:
    path = _recorded_session(tmp_path)
    with otlp_receiver() as (endpoint, received):
        provider = TracerProvider(resource=Resource.create({"service.name": "foldlog-test"}))
        provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
        assert export_session(path, provider, provider_name="deepseek") == 1
        provider.force_flush()
        provider.shutdown()
    assert received, "the receiver got no export request"
    resource = received[0].resource_spans[0].resource
    assert {kv.key: kv.value.string_value for kv in resource.attributes}["service.name"] == "foldlog-test"
    spans = decoded_spans(received)
    names = sorted(s.name for s in spans)
    parent = ["invoke_agent", "chat scripted", "execute_tool task", "chat scripted"]
    child = ["invoke_agent", "chat scripted", "execute_tool lookup", "chat scripted"]
    assert names == sorted([*parent, *child])
    by_id = {s.span_id: s for s in spans}
    lookup_span = next(s for s in spans if s.name == "execute_tool lookup")
    attrs = attribute_map(lookup_span)
    assert attrs["gen_ai.tool.name"] == "lookup" and attrs["gen_ai.tool.call.id"] == "c1"
    assert attrs["gen_ai.operation.name"] == "execute_tool" and attrs["gen_ai.provider.name"] == "deepseek"
    # nesting survives the wire: lookup -> child invoke_agent -> execute_tool task -> parent invoke_agent
    chain = []
    span = lookup_span
    while span.parent_span_id:
        span = by_id[span.parent_span_id]
        chain.append(span.name)
    assert chain == ["invoke_agent", "execute_tool task", "invoke_agent"]
    chat = next(s for s in spans if s.name == "chat scripted")
    cattrs = attribute_map(chat)
    assert cattrs["gen_ai.usage.input_tokens"] == 100 and cattrs["gen_ai.usage.output_tokens"] == 10
    assert cattrs["gen_ai.request.model"] == "scripted"
    assert chat.end_time_unix_nano >= chat.start_time_unix_nano > 0
    assert len({s.trace_id for s in spans}) == 1


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "foldlog", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_cli_log_trace_prints_the_tree_and_sends_otlp(tmp_path: Path) -> None:
    path = _recorded_session(tmp_path)
    out = _cli("log", "trace", str(path))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("invoke_agent ") and "end_reason=completed" in lines[0]
    assert lines[2].startswith("  execute_tool task ") and lines[3].startswith("    invoke_agent ")
    with otlp_receiver() as (endpoint, received):
        sent = _cli("log", "trace", str(path), "--otlp", endpoint)
    assert sent.returncode == 0, sent.stderr
    assert "sent 8 span(s)" in sent.stdout and "1 sub-agent log(s)" in sent.stdout
    assert len(decoded_spans(received)) == 8
