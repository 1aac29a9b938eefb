"""Tier 1 of the compaction benchmark: a *reader* model answers the probes.

The reader gets a surface as a plain transcript (`reader_entries`: tool calls with their
arguments) and K probe questions per prompt, and answers one numbered line each. An answer is
right when one of the probe's accepted answers occurs in it, normalised and as a whole token —
the rule survival uses (`foldlog.compaction.survival.present`). Every prompt is asked
``replicates`` times (separate, separately cached calls: answers vary between runs even at
temperature 0), on the surface after the fold and, as the baseline, on the unfolded surface —
cut to the reader's window from the end when it does not fit, and said so (``baseline_cut``).
See docs/compaction-benchmark.md, "Tier 1".
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from foldlog.compaction.model_cache import ModelCache, complete
from foldlog.compaction.probes import SCORED, Category, Probe
from foldlog.compaction.survival import normalize, present
from foldlog.errors import ConfigError
from foldlog.log.text import message_text
from foldlog.providers.base import Provider, Request

#: probes per prompt, and replicates of every prompt (the CLI's defaults)
DEFAULT_PER_PROMPT = 8
DEFAULT_REPLICATES = 3
#: a reader that does not say its window is assumed to have this one (tokens)
DEFAULT_READER_WINDOW = 8192
#: tokens kept for the instructions, the questions and the answers
ANSWER_RESERVE = 1024
#: characters per token assumed when cutting a surface to the window (conservative)
CHARS_PER_TOKEN = 3
#: below this baseline recall a reader cannot measure what a fold loses in a category
MIN_BASELINE = 0.5

READER_SYSTEM_PROMPT = (
    "You answer questions about an earlier conversation between a user, a coding assistant and "
    "its tools. Use only the conversation you are given. Answer every question on its own line, "
    "as its number, a dot and the answer: names, paths, commands and ids exactly as written "
    "there, instructions quoted verbatim. If the conversation does not say, answer `unknown`."
)

_NUMBERED = re.compile(r"^\s*(?:Q|A)?(\d+)\s*[.):]\s*(.*)$")


def reader_entries(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """One entry per message and per tool call, with the calls' arguments whole (the reader is
    asked about the files and commands they name; the summariser's transcript abbreviates them)."""
    out: list[str] = []
    for m in messages:
        role = str(m.get("role") or "?")
        text = message_text(m).strip()
        if text:
            out.append(f"[{role}] {text}")
        for call in m.get("tool_calls") or ():
            fn = call.get("function") or {} if isinstance(call, Mapping) else {}
            out.append(f"[{role} calls {fn.get('name') or '?'}] {fn.get('arguments') or ''}")
    return out


def surface_for_reader(messages: Sequence[Mapping[str, Any]], max_chars: int) -> tuple[str, bool]:
    """The surface as the reader's transcript, and whether it was cut: when it is longer than
    ``max_chars``, the latest entries that fit are kept (cut from the start: the end is what a
    next request carries last)."""
    entries = reader_entries(messages)
    text = "\n".join(entries)
    if len(text) <= max_chars:
        return text, False
    kept: list[str] = []
    used = 0
    for entry in reversed(entries):
        if used + len(entry) + 1 > max_chars:
            if not kept:  # one entry longer than the window: its end
                kept.append(entry[len(entry) - max_chars :])
            break
        kept.append(entry)
        used += len(entry) + 1
    return "\n".join(reversed(kept)), True


def reader_request(transcript: str, questions: Sequence[str], model: str | None = None) -> Request:
    numbered = "\n".join(f"{k}. {q}" for k, q in enumerate(questions, 1))
    user = f"Conversation:\n\n{transcript}\n\nQuestions:\n{numbered}\n\nAnswers (one numbered line each):"
    return Request(
        messages=[{"role": "system", "content": READER_SYSTEM_PROMPT}, {"role": "user", "content": user}],
        model=model,
        temperature=0.0,
        max_tokens=24 * len(questions) + 16,  # a short line per answer: a reader that echoes stops soon
    )


def parse_answers(text: str, n: int) -> list[str]:
    """The ``n`` answers of a reply: numbered lines (``3. …``, ``3) …``) by number; without
    numbers, the non-empty lines in order. A missing answer is empty (wrong)."""
    out = [""] * n
    numbered = False
    for line in text.splitlines():
        m = _NUMBERED.match(line)
        if m:
            k = int(m.group(1))
            if 1 <= k <= n and not out[k - 1]:
                out[k - 1] = m.group(2).strip()
                numbered = True
    if not numbered:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        for k, line in enumerate(lines[:n]):
            out[k] = line
    return out


def is_right(probe: Probe, answer: str) -> bool:
    """One of the accepted answers occurs in ``answer`` (normalised, as a whole token)."""
    hay = normalize(answer)
    return any(present(a, hay) for a in probe.answers)


@dataclass(frozen=True, slots=True)
class Recall:
    """One surface read ``replicates`` times: ``right[r][c]`` probes of category c answered
    right in replicate r, out of ``asked[c]``; ``cut``: the surface was cut to the window."""

    asked: Mapping[Category, int]
    right: tuple[Mapping[Category, int], ...]
    cut: bool

    def shares(self, category: Category) -> list[float]:
        n = self.asked.get(category, 0)
        return [r.get(category, 0) / n for r in self.right] if n else []

    def share(self, category: Category) -> float | None:
        s = self.shares(category)
        return statistics.fmean(s) if s else None


async def read(
    provider: Provider,
    probes: Sequence[Probe],
    messages: Sequence[Mapping[str, Any]],
    *,
    cache: ModelCache,
    per_prompt: int = DEFAULT_PER_PROMPT,
    replicates: int = DEFAULT_REPLICATES,
) -> Recall:
    """Ask ``provider`` the scored probes about ``messages``, ``per_prompt`` per call, each
    prompt ``replicates`` times."""
    check_counts(per_prompt, replicates)
    transcript, cut = surface_for_reader(messages, transcript_budget(provider.context_window, per_prompt))
    scored = [p for p in probes if p.category in SCORED]
    asked: dict[Category, int] = {}
    for p in scored:
        asked[p.category] = asked.get(p.category, 0) + 1
    right: list[dict[Category, int]] = []
    for r in range(replicates):
        counts: dict[Category, int] = {}
        for start in range(0, len(scored), per_prompt):
            batch = scored[start : start + per_prompt]
            request = reader_request(transcript, [p.question for p in batch], provider.model)
            reply = await complete(provider, request, cache, r)
            for p, answer in zip(batch, parse_answers(reply, len(batch)), strict=True):
                if is_right(p, answer):
                    counts[p.category] = counts.get(p.category, 0) + 1
        right.append(counts)
    return Recall(asked, tuple(right), cut)


def transcript_budget(window: int | None, per_prompt: int = DEFAULT_PER_PROMPT) -> int:
    """The characters of transcript a reader with context ``window`` (tokens; ``None``:
    `DEFAULT_READER_WINDOW`) is given: the window less `ANSWER_RESERVE` and 64 tokens a question,
    at `CHARS_PER_TOKEN`."""
    return max((window or DEFAULT_READER_WINDOW) - ANSWER_RESERVE - 64 * per_prompt, 256) * CHARS_PER_TOKEN


def check_counts(per_prompt: int, replicates: int) -> None:
    if per_prompt < 1:
        raise ConfigError(f"--probes-per-prompt must be at least 1, got {per_prompt}")
    if replicates < 1:
        raise ConfigError(f"--replicates must be at least 1, got {replicates}")


def recall_columns(folded: Recall, base: Recall) -> dict[str, Any]:
    """``recall_<c>`` and ``recall_base_<c>`` (shares, mean over replicates; ``None`` without
    probes), ``recall_spread_<c>`` (max − min over replicates of recall − baseline) and
    ``baseline_cut`` / ``folded_cut`` (a surface was cut to the reader's window)."""
    row: dict[str, Any] = {}
    for c in SCORED:
        after, before = folded.shares(c), base.shares(c)
        row[f"recall_{c}"] = folded.share(c)
        row[f"recall_base_{c}"] = base.share(c)
        diffs = [a - b for a, b in zip(after, before, strict=True)]
        row[f"recall_spread_{c}"] = (max(diffs) - min(diffs)) if diffs else None
    row["baseline_cut"] = base.cut
    # the folded surface longer than the reader's window too: a reader smaller than the agent's
    # window, which then reads the same tail on both surfaces (the figures mean nothing)
    row["folded_cut"] = folded.cut
    return row


__all__ = [
    "DEFAULT_PER_PROMPT",
    "DEFAULT_REPLICATES",
    "MIN_BASELINE",
    "READER_SYSTEM_PROMPT",
    "Recall",
    "check_counts",
    "is_right",
    "parse_answers",
    "read",
    "reader_entries",
    "reader_request",
    "recall_columns",
    "surface_for_reader",
    "transcript_budget",
]
