"""Finished spans as a tree: for printing (`foldlog log trace`) and for comparing two traces of
one session (ids differ from run to run; names, attributes, times and nesting do not)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    start: int
    end: int
    attributes: tuple[tuple[str, Any], ...]
    status: str
    children: tuple[Node, ...]


def _order(span: Any) -> tuple[int, int, int, str]:
    """Time order; spans that start in the same millisecond (log times have no finer grain) in
    the order of the events that made them (``foldlog.seq``), then by end and name."""
    seq = (span.attributes or {}).get("foldlog.seq")
    return (
        int(span.start_time or 0),
        seq if isinstance(seq, int) else -1,
        int(span.end_time or 0),
        span.name,
    )


def span_tree(spans: Iterable[Any]) -> tuple[Node, ...]:
    """The roots of ``spans`` (OpenTelemetry ``ReadableSpan``s), children in time order."""
    spans = list(spans)
    by_parent: dict[int | None, list[Any]] = {}
    ids = {s.context.span_id for s in spans}
    for s in spans:
        parent = s.parent.span_id if s.parent is not None and s.parent.span_id in ids else None
        by_parent.setdefault(parent, []).append(s)

    def build(parent: int | None) -> tuple[Node, ...]:
        items = sorted(by_parent.get(parent, []), key=_order)
        return tuple(
            Node(
                s.name,
                int(s.start_time or 0),
                int(s.end_time or 0),
                tuple(sorted((k, _hashable(v)) for k, v in (s.attributes or {}).items())),
                s.status.status_code.name,
                build(s.context.span_id),
            )
            for s in items
        )

    return build(None)


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, (list, tuple)) else v


SHOWN = (
    "gen_ai.request.model",
    "gen_ai.tool.call.id",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "foldlog.cost",
    "foldlog.turn.end_reason",
    "error.type",
)


def render(roots: Sequence[Node], *, all_attributes: bool = False) -> str:
    """An indented text tree: each span's name, duration and its main attributes."""
    lines: list[str] = []

    def walk(node: Node, depth: int) -> None:
        ms = (node.end - node.start) / 1e6
        attrs = dict(node.attributes)
        keys = sorted(attrs) if all_attributes else [k for k in SHOWN if k in attrs]
        shown = " ".join(f"{k.split('.', 1)[1] if k.startswith('gen_ai.') else k}={attrs[k]}" for k in keys)
        lines.append(f"{'  ' * depth}{node.name}  {ms:.0f} ms{'  ' + shown if shown else ''}")
        for child in node.children:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return "\n".join(lines)


__all__ = ["Node", "render", "span_tree"]
