"""Tier 2 of the compaction benchmark: a *judge* model scores a fold on Factory's six dimensions.

The judge sees the surface the next request carries after the fold (as the reader does, cut to
its window from the end when needed), the probes of the folded part — their questions with the
answers the full history gives, ``decision`` probes (the last plan / todo state) included — and
the rubric (`RUBRIC`), and replies with one JSON object of 0–5 scores. ``judge_overall`` is the
mean of the six. The rubric and the prompts are in docs/compaction-benchmark.md, "Tier 2".
"""

from __future__ import annotations

import json
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from foldlog.compaction.model_cache import ModelCache, complete
from foldlog.compaction.probes import Probe
from foldlog.compaction.reader import (
    ANSWER_RESERVE,
    CHARS_PER_TOKEN,
    DEFAULT_READER_WINDOW,
    surface_for_reader,
)
from foldlog.providers.base import Provider, Request

DIMENSIONS = (
    "accuracy",
    "context_awareness",
    "artifact_trail",
    "completeness",
    "continuity",
    "instruction_following",
)

RUBRIC = """\
Score each dimension from 0 to 5 (integers): 0 = absent or wrong, 1 = mostly missing,
2 = a few items kept, 3 = about half kept and usable, 4 = nearly all kept, minor gaps,
5 = everything the reference lists is kept, correct and usable.
- accuracy: what the context states about the folded work (files, commands, errors, ids) is correct.
- context_awareness: the context shows where the work stands: what was done, what is open.
- artifact_trail: every file the folded work created, edited or read is named with what was done to it.
- completeness: every reference item (errors, instructions, identifiers) can be answered from the context.
- continuity: an agent given only this context could continue the plan / todo state without redoing work.
- instruction_following: the user's instructions are kept verbatim or exactly in meaning."""

JUDGE_SYSTEM_PROMPT = (
    "You evaluate how well a compacted context preserves an earlier coding session. You get the "
    "context an agent will continue from, and reference facts taken from the full, unfolded "
    "history. Judge only whether the context lets the agent know and use these facts.\n\n"
    f"{RUBRIC}\n\n"
    "Reply with one JSON object and nothing else, with the integer keys "
    + ", ".join(f'"{d}"' for d in DIMENSIONS)
    + "."
)

_OBJECT = re.compile(r"\{.*?\}", re.S)


def judge_request(transcript: str, probes: Sequence[Probe], model: str | None = None) -> Request:
    facts = "\n".join(f"- [{p.category}] {p.question} Reference: {' | '.join(p.answers)}" for p in probes)
    user = (
        f"Compacted context:\n\n{transcript}\n\n"
        f"Reference facts from the folded history:\n{facts or '- (none)'}\n\nScores (JSON):"
    )
    return Request(
        messages=[{"role": "system", "content": JUDGE_SYSTEM_PROMPT}, {"role": "user", "content": user}],
        model=model,
        temperature=0.0,
        max_tokens=200,
    )


def parse_scores(text: str) -> dict[str, float | None]:
    """The six scores of a reply (its first JSON object holding any of them); a score missing,
    not a number or outside 0–5 is ``None``."""
    found: Mapping[str, Any] = {}
    for m in _OBJECT.finditer(text):
        try:
            data = json.loads(m.group(0))
        except ValueError:
            continue
        if isinstance(data, dict) and any(d in data for d in DIMENSIONS):
            found = data
            break
    out: dict[str, float | None] = {}
    for d in DIMENSIONS:
        v = found.get(d)
        ok = isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 5
        out[d] = float(v) if ok and v is not None else None
    return out


def judge_columns(scores: Mapping[str, float | None]) -> dict[str, Any]:
    """``judge_<dimension>`` and ``judge_overall`` (the mean of the scores given; ``None`` if none)."""
    row: dict[str, Any] = {f"judge_{d}": scores.get(d) for d in DIMENSIONS}
    given = [v for v in scores.values() if v is not None]
    row["judge_overall"] = statistics.fmean(given) if given else None
    return row


async def judge(
    provider: Provider,
    probes: Sequence[Probe],
    messages: Sequence[Mapping[str, Any]],
    *,
    cache: ModelCache,
) -> dict[str, Any]:
    """Score the surface ``messages`` (after the fold) against the ``probes``: the judge columns."""
    window = provider.context_window or DEFAULT_READER_WINDOW
    budget = max(window - ANSWER_RESERVE - len(probes) * 64, 256) * CHARS_PER_TOKEN
    transcript, _cut = surface_for_reader(messages, budget)
    reply = await complete(provider, judge_request(transcript, probes, provider.model), cache)
    return judge_columns(parse_scores(reply))


__all__ = [
    "DIMENSIONS",
    "JUDGE_SYSTEM_PROMPT",
    "RUBRIC",
    "judge",
    "judge_columns",
    "judge_request",
    "parse_scores",
]
