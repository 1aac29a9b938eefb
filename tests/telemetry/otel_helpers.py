"""An in-memory tracer provider, and a loopback OTLP/HTTP receiver that decodes what the
official exporter sends."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.http_server import LoopbackServer, Received, write_response


def memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def spans(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return list(exporter.get_finished_spans())


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[ExportTraceServiceRequest]]]:
    """``(endpoint URL, decoded export requests)`` of a receiver on 127.0.0.1 (a free port)."""
    received: list[ExportTraceServiceRequest] = []

    async def receive(req: Received, w: asyncio.StreamWriter) -> None:
        # the OTLP/HTTP protobuf binding: POST /v1/traces
        assert req.path == "/v1/traces", req.path
        assert req.headers.get("content-type") == "application/x-protobuf"
        request = ExportTraceServiceRequest()
        request.ParseFromString(req.body)
        received.append(request)
        payload = ExportTraceServiceResponse().SerializeToString()
        await write_response(w, 200, payload, content_type="application/x-protobuf")

    with LoopbackServer(receive) as server:
        yield f"{server.origin}/v1/traces", received


def decoded_spans(requests: list[ExportTraceServiceRequest]) -> list[Any]:
    return [s for r in requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


def attribute_map(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        v = kv.value
        kind = v.WhichOneof("value")
        out[kv.key] = (
            list(x.string_value for x in v.array_value.values) if kind == "array_value" else getattr(v, kind)
        )
    return out
