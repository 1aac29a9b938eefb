"""The viewer's page: one self-contained HTML file (``foldlog log view``).

The sessions' data (`foldlog.interchange.exports.view.model`) is embedded once, as JSON in a
``<script type="application/json">``; the stylesheet and the script (``assets/viewer.css``,
``assets/viewer.js``, package data) are inlined. The page's Content-Security-Policy allows no
network at all: nothing is fetched, images are ``data:`` URLs. The script builds the DOM from
the JSON in chunks (the first screen at once, the rest while the reader looks) and the heavy
parts — whole tool outputs, arguments, a request's context — only when opened.
"""

from __future__ import annotations

import html
import json
import os
import time
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from foldlog.interchange.exports.view.model import collect
from foldlog.interchange.exports.view.redact import Redactor
from foldlog.log.context import ContextBreakdown, breakdown, request_tools
from foldlog.log.grammar import kinds

if TYPE_CHECKING:
    from foldlog.log.session import Session

#: no network, no plug-ins, nothing but this page's own inline style and script, data: images
CSP = (
    "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'"
)
#: the version of the embedded data's shape (the script checks it)
DATA_VERSION = 1


@dataclass(frozen=True, slots=True)
class ViewPage:
    """A rendered page: its HTML, the sessions it shows, the secrets it replaced."""

    html: str
    sessions: list[str]
    redacted: dict[str, int]

    def write(self, path: str | os.PathLike[str]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html)


def _asset(name: str) -> str:
    return resources.files("foldlog.interchange.exports.view").joinpath("assets", name).read_text("utf-8")


def _script_json(value: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: ``</`` and ``<!--`` cannot end or open
    anything (``<`` is escaped), and U+2028/U+2029 are escaped for old parsers."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _kinds() -> dict[str, Any]:
    """The event types by their constants' names: the page's script names them as Python does
    (`foldlog.log.grammar.kinds`), never spelling them itself."""
    names = {n: getattr(kinds, n) for n in kinds.__all__}
    return {n: sorted(v) if isinstance(v, frozenset) else v for n, v in names.items()}


def render(
    session: Session,
    folder: str | os.PathLike[str] | None = None,
    *,
    redact: bool = True,
    window: int | None = None,
    context: ContextBreakdown | None = None,
) -> ViewPage:
    """The page of ``session``, with the sub-agents and forks found in ``folder`` (its log's
    folder: their headers name it as their parent). ``redact``: replace secrets (see
    `foldlog.interchange.exports.view.redact`); ``window``: the context window drawn in the
    context bar (unknown when None); ``context``: the breakdown to draw there (default: the next
    request's, with the planner's default settings and ``window``)."""
    redactor = Redactor()
    clean = redactor.data if redact else (lambda value: value)
    if context is None:
        context = breakdown(session, tools=request_tools(session), window=window)
    sessions = collect(session, folder, redact=clean, context=context.to_dict())
    data = {
        "version": DATA_VERSION,
        "generated": int(time.time() * 1000),
        "redact": redact,
        "redacted": dict(redactor.found),
        "sessions": [s.to_json() for s in sessions],
        "kinds": _kinds(),
    }
    title = f"foldlog · {session.id}"
    page = "\n".join(
        [
            "<!doctype html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>\n{_asset('viewer.css')}\n</style>",
            "</head>",
            f'<body data-session="{html.escape(session.id)}">',
            '<div id="app"><noscript>This page needs JavaScript to show the session.</noscript></div>',
            f'<script type="application/json" id="foldlog-data">{_script_json(data)}</script>',
            f"<script>\n{_asset('viewer.js')}\n</script>",
            "</body>",
            "</html>",
            "",
        ]
    )
    return ViewPage(page, [s.id for s in sessions], dict(redactor.found))


__all__ = ["CSP", "DATA_VERSION", "ViewPage", "render"]
