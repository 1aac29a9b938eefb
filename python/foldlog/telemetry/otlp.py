"""Sending finished spans to an OTLP/HTTP collector: once, in bounded time, and saying so when
it fails (``foldlog log trace --otlp URL``).

`send_spans` hands all the spans to the official exporter in one export call (one request, not
one per span), with ``timeout`` seconds for the whole call: the exporter retries a refused or
unreachable collector within that time and then gives up. Its retry messages go to the
``foldlog.telemetry`` logger at INFO (shown with logging configured, never printed on their
own); a failed export raises `TraceExportError` naming the collector and the last reason.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from foldlog.errors import ConfigError, TraceExportError

log = logging.getLogger("foldlog.telemetry")

#: seconds one export to a collector may take, retries included
DEFAULT_TIMEOUT = 5.0
#: the loggers the OTLP/HTTP exporter writes its retries and failures to
_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
)


class _Relay(logging.Handler):
    """Keeps the exporter's messages (for the error) and passes them on to foldlog's logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self.retries = 0
        #: what went wrong, in the exporter's words (the error of its last failed attempt)
        self.reason = ""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        if isinstance(record.msg, str) and record.msg.startswith("Transient error") and record.args:
            self.retries += 1
            self.reason = str(record.args[0] if isinstance(record.args, tuple) else record.args)
        elif not self.reason or not message.startswith("Failed to export spans batch due to timeout"):
            self.reason = message
        log.info("OTLP exporter: %s", message)


@contextmanager
def _exporter_messages() -> Iterator[_Relay]:
    """The exporter's log records, relayed to ``foldlog.telemetry`` instead of the terminal."""
    relay = _Relay()
    saved: list[tuple[logging.Logger, bool]] = []
    for name in _EXPORTER_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate))
        logger.addHandler(relay)
        logger.propagate = False
    try:
        yield relay
    finally:
        for logger, propagate in saved:
            logger.removeHandler(relay)
            logger.propagate = propagate


def send_spans(spans: Sequence[Any], endpoint: str, *, timeout: float = DEFAULT_TIMEOUT) -> int:
    """Send ``spans`` (finished ``ReadableSpan``s) to the OTLP/HTTP traces ``endpoint`` in one
    export of at most ``timeout`` seconds; returns how many were sent. Raises `TraceExportError`
    naming ``endpoint`` when the collector did not take them."""
    if not isinstance(timeout, int | float) or isinstance(timeout, bool) or not timeout > 0:
        raise ConfigError(f"timeout must be a positive number of seconds, got {timeout!r}")
    if not spans:
        return 0
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=endpoint, timeout=float(timeout))
    try:
        with _exporter_messages() as relay:
            result = exporter.export(list(spans))
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]
    if result is not SpanExportResult.SUCCESS:
        reason = relay.reason[:400] or "no reason given"
        raise TraceExportError(
            f"the OTLP collector at {endpoint} did not take the {len(spans)} span(s) within "
            f"{timeout:g} s ({relay.retries} retries, logged to 'foldlog.telemetry'): {reason}"
        )
    return len(spans)


__all__ = ["DEFAULT_TIMEOUT", "send_spans"]
