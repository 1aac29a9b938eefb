from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.mcp.mcp_helpers import serve_notes_http


@pytest.fixture(scope="module")
def notes_url() -> Iterator[str]:
    yield from serve_notes_http()
