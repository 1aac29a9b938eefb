"""Replays the saved fuzz inputs of the Python targets (``fuzz/regressions/<target>/``) through
the targets' own checks (``fuzz/python/<target>.py``), so every bug they found stays fixed."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

FUZZ = Path(__file__).resolve().parents[2] / "fuzz"
TARGETS = ("session_load", "session_add", "sse")


def target(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"fuzz_{name}", FUZZ / "python" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def inputs() -> list[tuple[str, Path]]:
    return [
        (name, path)
        for name in TARGETS
        for path in sorted((FUZZ / "regressions" / name).iterdir())
        if path.is_file()
    ]


@pytest.mark.parametrize(("name", "path"), inputs(), ids=lambda x: x if isinstance(x, str) else x.name)
def test_saved_input_passes_its_target(name: str, path: Path) -> None:
    check: Callable[[bytes], None] = target(name).check
    check(path.read_bytes())


@pytest.mark.parametrize("name", TARGETS)
def test_every_target_has_saved_inputs(name: str) -> None:
    assert any(p.is_file() for p in (FUZZ / "regressions" / name).iterdir())


def test_lone_surrogates_are_refused_as_invalid_events() -> None:
    # what the session_add target found: a str with no UTF-8 form escaped as UnicodeEncodeError
    from foldlog import Session
    from foldlog.errors import InvalidEventError

    s = Session(id="t")
    with pytest.raises(InvalidEventError, match=r"lone surrogate"):
        s.add({"role": "user", "content": "a\udcffb"})
    with pytest.raises(InvalidEventError, match=r"key holds a lone surrogate"):
        s.add({"role": "user", "content": "x", "\ud800": 1})
    assert len(s.events) == 0
