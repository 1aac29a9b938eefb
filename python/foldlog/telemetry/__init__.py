"""OpenTelemetry traces of agent sessions (``foldlog[otel]``), live (`instrument`) or from a
stored log (`export_session`), both built by one `SpanBuilder`. See docs/observability.md.
Nothing here is imported by ``import foldlog``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldlog._lazy import by_module, lazy_attributes

_LAZY = by_module(
    {
        "foldlog.telemetry.live": ("Instrumentation", "instrument", "trace_session"),
        "foldlog.telemetry.spans": ("SpanBuilder",),
        "foldlog.telemetry.replay": ("export_session",),
        "foldlog.telemetry.tree": ("span_tree",),
    }
)

if TYPE_CHECKING:
    from foldlog.telemetry.live import Instrumentation, instrument, trace_session
    from foldlog.telemetry.replay import export_session
    from foldlog.telemetry.spans import SpanBuilder
    from foldlog.telemetry.tree import span_tree

__getattr__, __dir__ = lazy_attributes(globals(), _LAZY)
__all__ = [
    "Instrumentation",
    "SpanBuilder",
    "export_session",
    "instrument",
    "span_tree",
    "trace_session",
]
