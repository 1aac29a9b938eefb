"""The session viewer: a session as one self-contained HTML page (``foldlog log view``).

`render` builds the page (`page.py`) from what the page shows of each session (`model.py`),
with secrets replaced (`redact.py`); the page's script and stylesheet are package data
(``assets/``), inlined. docs/viewer.md says what the page shows and how.
"""

from __future__ import annotations

from foldlog.interchange.exports.view.page import ViewPage, render

__all__ = ["ViewPage", "render"]
