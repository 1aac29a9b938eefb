"""Readable rendering of derived messages and raw events (rich; plain text when not a terminal)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from foldlog._frozen import thaw
from foldlog.cli.common import shorten

if TYPE_CHECKING:
    from rich.console import Console

MESSAGE_LIMIT = 4000
TOOL_LIMIT = 1200
ARGS_LIMIT = 300

_STYLE = {"system": "magenta", "user": "green", "assistant": "cyan", "tool": "yellow"}


def content_text(content: Any) -> str:
    from foldlog.interchange.events import text_of

    return text_of(content)


def call_line(name: str, arguments: str, limit: int = ARGS_LIMIT) -> str:
    """``name {args}`` on one line, arguments shortened."""
    args = " ".join(str(arguments).split())
    if limit and len(args) > limit:
        args = args[: limit - 1] + "…"
    return f"{name} {args}" if args else name


def print_messages(messages: Iterable[Mapping[str, Any]], out: Console, *, full: bool = False) -> None:
    from rich.markup import escape

    for index, msg in enumerate(messages):
        role = str(msg.get("role"))
        style = _STYLE.get(role, "white")
        title = role
        if role == "tool":
            title = f"tool {msg.get('name') or '?'} ← {msg.get('tool_call_id') or '?'}"
        out.print(f"[bold {style}]── {escape(title)} ─[/] [dim]#{index}[/]")
        reasoning = msg.get("reasoning_content")
        if reasoning:
            out.print(f"[dim italic]{escape(shorten(str(reasoning), 0 if full else MESSAGE_LIMIT))}[/]")
        text = content_text(msg.get("content"))
        limit = 0 if full else (TOOL_LIMIT if role == "tool" else MESSAGE_LIMIT)
        if text:
            out.print(escape(shorten(text, limit)))
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") or {}
            line = call_line(str(fn.get("name")), str(fn.get("arguments", "")), 0 if full else ARGS_LIMIT)
            out.print(f"[{style}]  → {escape(line)}[/] [dim]{escape(str(call.get('id')))}[/]")


def print_events(events: Iterable[Mapping[str, Any]], out: Console, *, full: bool = False) -> None:
    from rich.markup import escape

    for ev in events:
        data = json.dumps(ev.get("data"), ensure_ascii=False, default=thaw)
        if not full:
            data = shorten(data, ARGS_LIMIT).replace("\n", " ")
        extra = ""
        if "surfaceOp" in ev:
            extra += f" op={json.dumps(ev['surfaceOp'], default=thaw)}"
        sources = list(ev.get("sourceEventSeqs") or ())
        if sources:
            more = f",… +{len(sources) - 10}" if len(sources) > 12 and not full else ""
            shown = sources if full or len(sources) <= 12 else sources[:10]
            extra += f" from=[{','.join(map(str, shown))}{more}]"
        out.print(
            f"[dim]{ev.get('seq'):>6}[/] [bold]{escape(str(ev.get('type')))}[/]{escape(extra)} {escape(data)}"
        )
