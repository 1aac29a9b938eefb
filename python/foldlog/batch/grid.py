"""The grid `compact-eval` plans and folds each session at: windows × tail budgets × keep
policies, from the command line (comma lists) or a TOML file.

TOML (every key optional; the defaults below fill what is missing)::

    windows = [32000, 128000]
    tail_tokens = [4096, 16384]
    keep_policies = ["errors", "none"]
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldlog.compaction.settings import KEEP_POLICIES, CompactionSettings, KeepPolicy
from foldlog.errors import ConfigError

DEFAULT_WINDOWS = (32_000, 128_000)
DEFAULT_TAILS = (4_096, 16_384)
DEFAULT_KEEPS: tuple[KeepPolicy, ...] = ("errors",)


@dataclass(frozen=True, slots=True, order=True)
class GridPoint:
    """One setting of the compaction constants a session is evaluated at."""

    window: int
    tail_tokens: int
    keep_policy: KeepPolicy

    @property
    def label(self) -> str:
        return f"w{self.window // 1000}k/t{self.tail_tokens // 1000}k/{self.keep_policy}"

    def settings(self) -> CompactionSettings:
        """The compactor's settings at this point (the spec's other constants)."""
        return CompactionSettings(
            window=self.window, tail_tokens=self.tail_tokens, keep_policy=self.keep_policy
        )


def make_grid(
    windows: Sequence[int] = DEFAULT_WINDOWS,
    tails: Sequence[int] = DEFAULT_TAILS,
    keeps: Sequence[str] = DEFAULT_KEEPS,
) -> tuple[GridPoint, ...]:
    """Every combination, checked: positive windows and tails, known keep policies."""
    for name, values in (("window", windows), ("tail budget", tails)):
        if not values:
            raise ConfigError(f"the grid needs at least one {name}")
        bad = [v for v in values if isinstance(v, bool) or not isinstance(v, int) or v <= 0]
        if bad:
            raise ConfigError(f"a grid {name} must be a positive number of tokens, got {bad[0]!r}")
    if not keeps:
        raise ConfigError("the grid needs at least one keep policy")
    for keep in keeps:
        if keep not in KEEP_POLICIES:
            raise ConfigError(f"unknown keep policy {keep!r} (known: {', '.join(KEEP_POLICIES)})")
    points = {
        GridPoint(w, t, k)  # type: ignore[arg-type]  # checked above
        for w, t, k in itertools.product(windows, tails, keeps)
    }
    return tuple(sorted(points))


def parse_ints(text: str, what: str) -> list[int]:
    """``"32000,128k"`` → ``[32000, 128000]`` (``k`` for thousands)."""
    out = []
    for part in text.split(","):
        part = part.strip().lower()
        if not part:
            continue
        scale = 1000 if part.endswith("k") else 1
        try:
            out.append(int(part.removesuffix("k")) * scale)
        except ValueError:
            raise ConfigError(f"{what}: {part!r} is not a number of tokens") from None
    return out


def load_toml(path: str | Path) -> tuple[GridPoint, ...]:
    """The grid of a TOML file (see the module's docstring)."""
    p = Path(path)
    try:
        doc: dict[str, Any] = tomllib.loads(p.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"grid file {p}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"grid file {p}: {exc}") from exc
    unknown = set(doc) - {"windows", "tail_tokens", "keep_policies"}
    if unknown:
        raise ConfigError(f"grid file {p}: unknown key(s) {', '.join(sorted(unknown))}")
    for key in doc:
        if not isinstance(doc[key], list):
            raise ConfigError(f"grid file {p}: {key} must be a list")
    return make_grid(
        doc.get("windows", list(DEFAULT_WINDOWS)),
        doc.get("tail_tokens", list(DEFAULT_TAILS)),
        doc.get("keep_policies", list(DEFAULT_KEEPS)),
    )


__all__ = [
    "DEFAULT_KEEPS",
    "DEFAULT_TAILS",
    "DEFAULT_WINDOWS",
    "GridPoint",
    "load_toml",
    "make_grid",
    "parse_ints",
]
