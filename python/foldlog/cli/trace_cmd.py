"""``foldlog log trace SESSION [--otlp URL]``: the OpenTelemetry spans of a stored session
(`foldlog.telemetry.export_session`), printed as a tree, or sent to an OTLP/HTTP collector."""

from __future__ import annotations

import argparse
from typing import Any

from foldlog.cli.common import config_from_args, float_arg, session_path
from foldlog.cli.exits import EXIT_OK


def add_trace_parser(log_verbs: Any) -> None:
    trace = log_verbs.add_parser("trace", help="the OpenTelemetry spans of a log (needs foldlog[otel])")
    trace.add_argument("path", metavar="PATH|ID")
    trace.add_argument(
        "--otlp",
        metavar="URL",
        help="send the spans to this OTLP/HTTP traces endpoint (e.g. http://127.0.0.1:4318/v1/traces)",
    )
    trace.add_argument(
        "--timeout",
        type=float_arg(0.0, inclusive=False),
        default=5.0,
        metavar="SECONDS",
        help="--otlp: how long sending may take, retries included (default 5); then exit 1",
    )
    trace.add_argument("--provider", help="gen_ai.provider.name for the spans (the log does not record it)")
    trace.add_argument(
        "--content", action="store_true", help="include message contents, tool arguments and results"
    )
    trace.add_argument("--attributes", action="store_true", help="print every attribute of each span")
    trace.set_defaults(func=cmd_trace)


def cmd_trace(args: argparse.Namespace) -> int:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from foldlog.telemetry.replay import export_session
    from foldlog.telemetry.tree import render, span_tree

    path = session_path(args.path, config_from_args(args))
    provider = TracerProvider(resource=Resource.create({"service.name": "foldlog"}))
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        children = export_session(path, provider, provider_name=args.provider, capture_content=args.content)
        provider.force_flush()
    finally:
        provider.shutdown()
    spans = memory.get_finished_spans()
    if args.otlp:
        from foldlog.telemetry.otlp import send_spans

        # one export, after the spans are made: bounded by --timeout, a failure is exit 1
        sent = send_spans(spans, args.otlp, timeout=args.timeout)
        print(f"{path}: sent {sent} span(s) to {args.otlp} ({children} sub-agent log(s))")
    else:
        print(render(span_tree(spans), all_attributes=args.attributes))
    return EXIT_OK
