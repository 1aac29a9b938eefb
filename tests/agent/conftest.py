from __future__ import annotations

import pytest

from foldlog import Session


@pytest.fixture
def session() -> Session:
    return Session(system="You are a test assistant.")
