"""Running a check under atheris: ``python fuzz/python/<target>.py [libFuzzer flags] [corpus dirs]``.

Each target module defines ``check(data: bytes)``, which raises (an `AssertionError` or an
exception that should not escape) on a finding; the regression test replays saved inputs
through the same function without atheris.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def fuzz(check: Callable[[bytes], None]) -> None:
    import atheris  # type: ignore[import-untyped]  # only the fuzz run needs it (`pip install --group fuzz`)

    atheris.instrument_all()
    atheris.Setup(sys.argv, check)
    atheris.Fuzz()
