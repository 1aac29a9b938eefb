"""The compaction summary: the transcript given to the summariser, and the call (its fallback, the
structured digest, is :mod:`foldlog.compaction.digest`).

See ``spec/compaction.md`` ("Summarising"). The summariser sees argument *keys* only (values can
leak task text the model should not paraphrase into a digest), never reasoning, and a transcript
capped to fit its window.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from foldlog.compaction.planning import DIGEST_CLOSE, DIGEST_HEADER, DIGEST_OPEN
from foldlog.errors import ProviderTimeout
from foldlog.log.grammar.types import Usage
from foldlog.log.text import message_text
from foldlog.providers.base import Chunk, Done, Provider, Request

SUMMARY_SYSTEM_PROMPT = """\
You are folding the earlier part of an AI agent's conversation into a briefing, to free context.
The user's own turns and the recent tail of the conversation are kept word for word next to your \
briefing; your job is to fold the assistant and tool work into notes the agent can resume from.
Write under these exact headings, and omit a heading that would be empty:

## Standing facts & constraints
Everything the user stated that still governs the work (names, paths, IDs, versions, preferences, \
"never do X" rules), in their own words.

## Goal
What the user asked for and why.

## Decisions & rationale
Choices made so far and the reasons, so they are not revisited.

## Files & code
Files read or changed, with the facts that matter: signatures, locations, data shapes, exact edits.

## Commands & outcomes
Commands run and their relevant results: what passed, what failed, the error text that matters.

## Errors & fixes
Problems met and how they were solved (or not), so dead ends are not repeated.

## Pending & next step
What is unfinished, and the single next action.

Rules: be terse (bullets and fragments, not prose); keep identifiers, paths and numbers exact; \
invent nothing: leave out what the messages do not say."""

FOCUS_LINE = "Additional focus for this compaction (prioritize keeping this):"
#: introduces the structured digest's sections (compaction/digest.py), computed from the same messages
FACTS_LINE = (
    "Facts computed from these messages that the briefing must keep, with paths, commands and the "
    "user's words exactly as written here (under your headings: files, commands, errors, standing "
    "constraints, pending work):"
)
#: added when the kept-overflow rule folds kept user turns and earlier digests into this summary
RELEASED_LINE = (
    "This part also holds the user's own earlier messages and earlier briefings, which are not kept "
    "word for word this time: carry everything in them that still governs the work into the briefing, "
    "the user's requests and constraints in their own words."
)

# below this many characters per entry, a transcript is cut from the middle instead
_MIN_ENTRY_CHARS = 200


def digest_content(summary: str) -> str:
    """The digest message text wrapping ``summary``."""
    return f"{DIGEST_OPEN}\n{DIGEST_HEADER}\n{summary.strip()}\n{DIGEST_CLOSE}"


class NoSummary:
    """A provider whose stream ends at once with no text: the compactor then takes its documented
    mechanical fold instead of calling a model (``foldlog compact --mechanical``, ``foldlog batch
    compact-eval``). ``context_window`` is the window it reports (the summariser's)."""

    model = "mechanical"

    def __init__(self, window: int | None = None) -> None:
        self.context_window = window

    async def stream(self, request: Request) -> AsyncIterator[Chunk]:
        yield Done("stop")

    async def aclose(self) -> None:
        return None


def _argument_keys(arguments: Any) -> list[str]:
    if isinstance(arguments, Mapping):
        return [str(k) for k in arguments]
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) and arguments.strip() else {}
    except ValueError:
        return []
    return [str(k) for k in parsed] if isinstance(parsed, Mapping) else []


def transcript_entries(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """One entry per message (plus one per tool call), in the summariser's format."""
    names: dict[str, str] = {}
    out: list[str] = []
    for m in messages:
        role = m.get("role")
        text = message_text(m).strip()
        if role == "assistant":
            if text:
                out.append(f"[assistant] {text}")
            for c in m.get("tool_calls") or ():
                fn = c.get("function", c) if isinstance(c, Mapping) else {}
                name = str(fn.get("name") or "?")
                names[str(c.get("id"))] = name
                keys = _argument_keys(fn.get("arguments"))
                out.append(f"[assistant calls {name}] {{{', '.join(keys)}}} ({len(keys)} keys)")
        elif role == "tool":
            name = str(m.get("name") or names.get(str(m.get("tool_call_id")), "?"))
            out.append(f"[tool {name} result] {text}")
        elif role in ("user", "system"):
            out.append(f"[{role}] {text}")
    return out


_CUT_MARK = 32  # room for " […N chars cut…] "


def _cut(entry: str, limit: int) -> str:
    """``entry`` in at most ``limit`` characters, its middle replaced by a marker."""
    if len(entry) <= limit:
        return entry
    half = max((limit - _CUT_MARK) // 2, 1)
    return f"{entry[:half]} […{len(entry) - 2 * half} chars cut…] {entry[-half:]}"


def cap_transcript(entries: Sequence[str], max_chars: int) -> str:
    """Join ``entries`` within ``max_chars``: long entries are cut in the middle to a common length
    (the short ones stay whole); if even that is too long, entries from the middle are dropped."""
    joined = "\n".join(entries)
    if len(joined) <= max_chars:
        return joined
    budget = max_chars - len(entries)  # newlines
    lo, hi = _MIN_ENTRY_CHARS, max((len(e) for e in entries), default=0)
    # the largest per-entry length that fits (water filling)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(len(e), mid) for e in entries) <= budget:
            lo = mid
        else:
            hi = mid - 1
    cut = [_cut(e, lo) for e in entries]
    if sum(len(e) + 1 for e in cut) <= max_chars:
        return "\n".join(cut)
    # keep the beginning (the goal) and the end (the latest state); drop the middle
    head: list[str] = []
    tail: list[str] = []
    used = 80
    i, j = 0, len(cut) - 1
    while i <= j:
        take_head = len(head) <= len(tail)
        e = cut[i] if take_head else cut[j]
        if used + len(e) + 1 > max_chars:
            break
        used += len(e) + 1
        if take_head:
            head.append(e)
            i += 1
        else:
            tail.append(e)
            j -= 1
    dropped = len(cut) - len(head) - len(tail)
    return "\n".join(
        [*head, f"[… {dropped} entries omitted to fit the summariser's window …]", *reversed(tail)]
    )


def summary_request(
    messages: Sequence[Mapping[str, Any]],
    *,
    focus: str | None,
    max_chars: int,
    model: str | None,
    released: bool = False,
    facts: str = "",
) -> Request:
    """The summariser's request: no tools, no reasoning effort, just the briefing instruction.
    ``released``: the fold holds kept messages (the kept-overflow rule), which it must carry.
    ``facts``: the structured digest's sections (`digest.sections`), given as facts to keep;
    the transcript is capped to leave room for them."""
    transcript = cap_transcript(transcript_entries(messages), max(max_chars - len(facts), max_chars // 2))
    user = f"Conversation to fold:\n\n{transcript}"
    if facts:
        user += f"\n\n{FACTS_LINE}\n{facts}"
    if released:
        user += f"\n\n{RELEASED_LINE}"
    if focus:
        user += f"\n\n{FOCUS_LINE}\n{focus.strip()}"
    return Request(
        messages=[{"role": "system", "content": SUMMARY_SYSTEM_PROMPT}, {"role": "user", "content": user}],
        tools=(),
        model=model,
    )


@dataclass(slots=True)
class SummaryOutcome:
    text: str  # empty when the summariser failed: use the mechanical fold
    attempts: int
    error: str | None = None


async def _one_call(provider: Provider, request: Request, on_usage: Callable[[Usage], None]) -> str:
    parts: list[str] = []
    async for chunk in provider.stream(request):
        kind = chunk.kind
        if kind == "text":
            parts.append(chunk.text)  # type: ignore[union-attr]
        elif kind == "usage":
            on_usage(chunk.usage)  # type: ignore[union-attr]
        elif kind == "error":
            raise chunk.error  # type: ignore[union-attr]
    return "".join(parts).strip()


async def summarize(
    provider: Provider, request: Request, *, timeout: float, on_usage: Callable[[Usage], None]
) -> SummaryOutcome:
    """One summary call under ``timeout``; empty output or an error gets one retry, a timeout none.
    Cancellation propagates (the caller records the compaction as ended with an error)."""
    error: str | None = None
    for attempt in (1, 2):
        try:
            text = await asyncio.wait_for(_one_call(provider, request, on_usage), timeout)
        except TimeoutError:
            return SummaryOutcome("", attempt, f"summary timed out after {timeout:g} s")
        except ProviderTimeout as e:
            return SummaryOutcome("", attempt, f"summary timed out: {e}")
        except Exception as e:  # any provider failure: retry once, then the mechanical fold
            error = f"{type(e).__name__}: {e}"
            continue
        if text:
            return SummaryOutcome(text, attempt)
        error = "the summariser returned nothing"
    return SummaryOutcome("", 2, error)


__all__ = [
    "FACTS_LINE",
    "FOCUS_LINE",
    "RELEASED_LINE",
    "SUMMARY_SYSTEM_PROMPT",
    "SummaryOutcome",
    "cap_transcript",
    "digest_content",
    "summarize",
    "summary_request",
    "transcript_entries",
]
