"""Tier 0 of the compaction benchmark: probe *survival*, no model.

A probe survives when one of its accepted answers is still written somewhere in the surface the
next request would carry after the fold (message text, tool-call names and arguments), compared
normalised (docs/compaction-benchmark.md, "Survival"). It is an upper bound on what a reader
could recall — a name that is present may still be unusable — never a recall figure.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog.compaction.call_paths import json_strings
from foldlog.compaction.probes import DEFAULT_CAP, SCORED, Category, Probe, probes_for_plan
from foldlog.errors import ConfigError
from foldlog.log.text import message_text

if TYPE_CHECKING:
    from foldlog.compaction.settings import CompactionSettings
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider

_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """What survival compares: lower case, ``\\`` as ``/``, whitespace runs as one space, a
    leading ``./`` dropped (answers)."""
    t = _SPACE.sub(" ", text.replace("\\", "/").lower()).strip()
    while t.startswith("./"):
        t = t[2:]
    return t


def surface_text(messages: Iterable[Mapping[str, Any]]) -> str:
    """Everything the next request carries as text, normalised: each message's text, and each
    call's tool name, raw arguments and their decoded strings."""
    parts: list[str] = []
    for m in messages:
        parts.append(message_text(m))
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {}
            parts.append(str(fn.get("name") or ""))
            raw = fn.get("arguments")
            if isinstance(raw, str):
                parts.append(raw)
                try:
                    parts.extend(json_strings(json.loads(raw)))
                except ValueError:
                    pass
    return normalize("\n".join(parts))


def present(answer: str, haystack: str) -> bool:
    """``answer`` (normalised) occurs in the normalised ``haystack`` as a whole token: an answer
    that starts (ends) with a word character must not continue a word, a dotted name or a
    hyphenated one there (``a.py`` is not in ``data.py``, ``#12`` is not in ``#123``)."""
    a = normalize(answer)
    if not a:
        return False
    head = r"(?<![\w.-])" if re.match(r"\w", a[0]) else ""
    tail = r"(?![\w-])" if re.match(r"\w", a[-1]) else ""
    return re.search(head + re.escape(a) + tail, haystack) is not None


def survives(probe: Probe, haystack: str) -> bool:
    """Any accepted answer present (a file: its path, or ``parent/basename``)."""
    return any(present(a, haystack) for a in probe.answers)


@dataclass(frozen=True, slots=True)
class SurvivalReport:
    """Tier 0 of one fold: the probes, whether each survived (``None`` for ``decision`` probes,
    which tier 0 does not score), and the fold's token counts."""

    probes: tuple[Probe, ...]
    survived: tuple[bool | None, ...]
    tokens_before: int
    tokens_after: int
    folded: int  # messages folded (0: nothing folded, no probes)

    def count(self, category: Category) -> int:
        return sum(1 for p in self.probes if p.category == category)

    def survived_count(self, category: Category) -> int:
        return sum(1 for p, s in zip(self.probes, self.survived, strict=True) if p.category == category and s)

    def share(self, category: Category) -> float | None:
        """Survived / probes for a scored category (``None`` without probes): an upper bound."""
        n = self.count(category)
        return self.survived_count(category) / n if n else None

    @property
    def saved(self) -> float:
        """The share of the surface's tokens the fold saved."""
        return 1 - self.tokens_after / self.tokens_before if self.tokens_before else 0.0

    def columns(self) -> dict[str, int]:
        """``probes_<c>`` and ``survived_<c>`` for c in artifact, error, constraint, identifier
        (the compact-eval columns)."""
        out: dict[str, int] = {}
        for c in SCORED:
            out[f"probes_{c}"] = self.count(c)
            out[f"survived_{c}"] = self.survived_count(c)
        return out

    def lost(self, category: Category) -> list[Probe]:
        return [
            p
            for p, s in zip(self.probes, self.survived, strict=True)
            if p.category == category and s is False
        ]


def score(probes: Sequence[Probe], surface: Iterable[Mapping[str, Any]]) -> tuple[bool | None, ...]:
    """Whether each probe survived in ``surface`` (the derived messages after the fold)."""
    haystack = surface_text(surface)
    return tuple(None if p.category not in SCORED else survives(p, haystack) for p in probes)


def probe_survival(
    session: Session,
    settings: CompactionSettings,
    *,
    provider: Provider | None = None,
    cap: int = DEFAULT_CAP,
    force: bool = True,
) -> SurvivalReport:
    """Fold a copy of ``session`` once with ``settings`` (mechanically, or summarised by
    ``provider``), and report which probes of the folded part survive on the surface after it.
    ``session`` itself is not changed. ``force``: fold even under the trigger (as ``foldlog
    compact``). Call it outside an event loop (it runs the fold with `asyncio.run`)."""
    if settings.window <= 0:
        raise ConfigError("settings.window: probe survival folds at a context window; give one (> 0)")
    return asyncio.run(_probe_survival(session, settings, provider, cap, force))


async def _probe_survival(
    session: Session,
    settings: CompactionSettings,
    provider: Provider | None,
    cap: int,
    force: bool,
) -> SurvivalReport:
    from foldlog.compaction.compactor import Compactor
    from foldlog.compaction.summary import NoSummary
    from foldlog.log.session import Session as SessionClass

    copy = SessionClass.from_bytes(session.to_bytes(), source=f"{session.id} (probe survival)")
    copy.model = session.model or session.counting_model(None)
    summariser: Any = provider if provider is not None else NoSummary(settings.window)
    try:
        compactor = Compactor(copy, summariser, settings)
        preview = compactor.plan(force=force)
        probes = probes_for_plan(copy, preview, cap)
        result = await compactor.compact("manual", force=force)
    finally:
        if provider is None:
            await summariser.aclose()
    return after_fold(probes, copy, preview.tokens_before, result)


def after_fold(probes: Sequence[Probe], session: Session, tokens_before: int, result: Any) -> SurvivalReport:
    """The report once ``session`` was folded (``result``: the `CompactionResult`, ``None`` when
    nothing was folded: then no probe counts, as none of their evidence left the surface)."""
    # masked results count as changed messages too (the mask and hybrid strategies)
    folded = int(result.folded) + int(result.masked) if result is not None else 0
    if not folded:
        return SurvivalReport((), (), tokens_before, tokens_before, 0)
    return SurvivalReport(
        tuple(probes),
        score(probes, session.derive_messages()),
        tokens_before,
        int(result.tokens_after),
        folded,
    )


__all__ = [
    "SurvivalReport",
    "after_fold",
    "normalize",
    "present",
    "probe_survival",
    "score",
    "surface_text",
    "survives",
]
