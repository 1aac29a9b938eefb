"""Tier 1 over a few corpus sessions: each session folded mechanically at the largest window
that saves 50% (as `probe_corpus`), a few probes per category, read on the folded surface and on
the unfolded baseline, ``R`` replicates. Only sessions whose *unfolded* surface fits the
reader's window whole are read (else both surfaces would be cut to the same tail); with
``--prefixes`` each session is first cut to its longest prefix (whole events) whose unfolded
surface fits the window — a real session as it stood earlier, so the reader sees all of it —
and the prefixes with at least 3 scored probes are read.

The reader is the packaged Gemma 3 270M (in process, its 8,192-token window), or with
``--gguf PATH`` any GGUF served by llama.cpp's OpenAI-compatible server with the chat template of
its metadata — the optional Qwen2.5-Coder 0.5B Instruct of ``scripts/fetch-reader-model.sh``
(``--n-ctx``: its window, default 32,768). The tier 1 figures of docs/compaction-benchmark.md
come from here (slow: minutes per session)::

    FOLDLOG_SHARED=../shared .venv/bin/python -m tests.compaction.reader_corpus [SESSIONS] [CAP] [R]
    FOLDLOG_SHARED=../shared .venv/bin/python -m tests.compaction.reader_corpus 3 8 3 \\
        --gguf "$(scripts/fetch-reader-model.sh)" --n-ctx 32768
    FOLDLOG_SHARED=../shared .venv/bin/python -m tests.compaction.reader_corpus 4 3 3 \\
        --gguf "$(scripts/fetch-reader-model.sh)" --n-ctx 8192 --prefixes --cache /tmp/reader-cache
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from foldlog import Session
from foldlog.compaction import Compactor
from foldlog.compaction.model_cache import ModelCache
from foldlog.compaction.probes import SCORED, probes_for_plan
from foldlog.compaction.reader import Recall, read, surface_for_reader, transcript_budget
from foldlog.compaction.settings import CompactionSettings
from foldlog.compaction.summary import NoSummary
from tests.compaction.corpus_histories import imported_sessions
from tests.compaction.probe_corpus import corpus_reports, fold_saving

PER_PROMPT = 8
#: the name the served GGUF is asked by (and cached under)
GGUF_ALIAS = "gguf-reader"


async def fold_and_read(
    s: Session, settings: CompactionSettings, reader: Any, cap: int, replicates: int, cache: ModelCache
) -> tuple[Recall, Recall]:
    copy = Session.from_bytes(s.to_bytes(), source=f"{s.id} (reader)")
    copy.model = s.model
    summariser = NoSummary(settings.window)
    compactor = Compactor(copy, summariser, settings)
    preview = compactor.plan(force=True)
    probes = probes_for_plan(copy, preview, cap)
    unfolded = copy.derive_messages()
    await compactor.compact("manual", force=True)
    await summariser.aclose()
    folded = await read(
        reader, probes, copy.derive_messages(), cache=cache, per_prompt=PER_PROMPT, replicates=replicates
    )
    base = await read(reader, probes, unfolded, cache=cache, per_prompt=PER_PROMPT, replicates=replicates)
    return folded, base


@asynccontextmanager
async def served_reader(gguf: Path, n_ctx: int) -> AsyncIterator[Any]:
    """The GGUF behind llama.cpp's server (its own chat template), read through the
    OpenAI-compatible provider with the server's window."""
    from foldlog.providers.http.openai_compat import OpenAICompatible
    from foldlog.providers.local.server import LlamaServer

    server = LlamaServer(gguf, n_ctx=n_ctx, chat_format=None, model_alias=GGUF_ALIAS, startup_timeout=300)
    await server.start()
    # a 15k-token prompt on two loaded cores takes over 15 minutes before its first byte (about
    # 8 tokens a second measured): no stall or idle watchdog short of that, no retry of a slow prompt
    reader = OpenAICompatible(
        server.base_url,
        None,
        GGUF_ALIAS,
        context_window=n_ctx,
        stall_timeout=3_600,
        idle_timeout=None,
        max_retries=0,
    )
    try:
        yield reader
    finally:
        await reader.aclose()
        server.stop()


@asynccontextmanager
async def packaged_reader() -> AsyncIterator[Any]:
    from foldlog.providers.local.provider import LocalLlama

    reader = LocalLlama()
    try:
        yield reader
    finally:
        await reader.aclose()


def longest_prefix(s: Session, budget: int) -> Session | None:
    """``s`` cut to its longest prefix of whole events whose surface, as the reader's
    transcript, fits ``budget`` characters (``None`` under 10 events: nothing worth folding)."""
    lines = s.to_bytes().split(b"\n")
    head, events = lines[0], [line for line in lines[1:] if line]

    def cut(k: int) -> Session:
        return Session.from_bytes(b"\n".join([head, *events[:k]]) + b"\n")

    def fits(k: int) -> bool:
        return not surface_for_reader(cut(k).derive_messages(), budget)[1]

    if fits(len(events)):
        return cut(len(events))
    lo, hi = 1, len(events)
    while lo < hi:  # the longest k that fits (a surface only grows with its events)
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
    return cut(lo) if lo > 10 else None


def chosen_prefixes(sessions: int, window: int) -> list[tuple[str, Session, CompactionSettings]]:
    """The first ``sessions`` corpus sessions whose longest prefix fitting ``window`` folds by
    50% with at least 3 scored probes, as those prefixes."""
    out: list[tuple[str, Session, CompactionSettings]] = []
    budget = transcript_budget(window, PER_PROMPT)
    for name, s in imported_sessions():
        if len(out) == sessions:
            break
        if name.startswith("openai:") or any(name == n for n, _s, _c in out):
            continue
        cut = longest_prefix(s, budget)
        found = fold_saving(cut, 0.5) if cut is not None else None
        if cut is None or found is None or sum(p.category in SCORED for p in found[1].probes) < 3:
            continue
        out.append((name, cut, found[0]))
    return out


def chosen_sessions(sessions: int, window: int) -> list[tuple[str, Session, CompactionSettings]]:
    """The first ``sessions`` corpus sessions folding by 50% with a scored probe whose unfolded
    surface fits ``window`` whole (each once: the corpus holds one sub-agent file twice)."""
    out: list[tuple[str, Session, CompactionSettings]] = []
    seen: set[str] = set()
    budget = transcript_budget(window, PER_PROMPT)
    for name, s, settings, report in corpus_reports(0.5):
        if len(out) == sessions:
            break
        if name in seen or not any(p.category in SCORED for p in report.probes):
            continue
        if surface_for_reader(s.derive_messages(), budget)[1]:  # the baseline would be cut
            continue
        seen.add(name)
        out.append((name, s, settings))
    return out


async def read_all(
    chosen: Sequence[tuple[str, Session, CompactionSettings]],
    reader: Any,
    cap: int,
    replicates: int,
    cache_dir: Path | None = None,
) -> None:
    cache = ModelCache(cache_dir)
    asked: Counter[str] = Counter()
    right: Counter[str] = Counter()
    base_right: Counter[str] = Counter()
    spreads: dict[str, list[float]] = {}
    started = time.monotonic()
    for name, s, settings in chosen:
        t0 = time.monotonic()
        folded, base = await fold_and_read(s, settings, reader, cap, replicates, cache)
        cut = " (folded surface cut to the window)" if folded.cut else ""
        print(f"{name}: window {settings.window:,}{cut}, {time.monotonic() - t0:.0f} s", flush=True)
        for c in SCORED:
            n = folded.asked.get(c, 0)
            if n:
                asked[c] += n * replicates
                right[c] += sum(r.get(c, 0) for r in folded.right)
                base_right[c] += sum(r.get(c, 0) for r in base.right)
                diffs = [a - b for a, b in zip(folded.shares(c), base.shares(c), strict=True)]
                spreads.setdefault(c, []).append(max(diffs) - min(diffs))
                print(f"  {c} ({n} probes): recall {folded.shares(c)} baseline {base.shares(c)}", flush=True)
    print(f"{len(chosen)} sessions, {cache.misses} calls, {time.monotonic() - started:.0f} s")
    for c in SCORED:
        if asked[c]:
            rec, bas = right[c] / asked[c], base_right[c] / asked[c]
            spread = max(spreads[c])
            print(
                f"{c}: {asked[c] // replicates} probes, recall {rec:.0%}, baseline {bas:.0%}, "
                f"loss {100 * (bas - rec):+.0f} points (spread over replicates up to {100 * spread:.0f})"
            )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.compaction.reader_corpus")
    parser.add_argument("sessions", nargs="?", type=int, default=2)
    parser.add_argument("cap", nargs="?", type=int, default=2, help="probes per category and session")
    parser.add_argument("replicates", nargs="?", type=int, default=3)
    parser.add_argument("--gguf", type=Path, help="a GGUF to serve as the reader (its own chat template)")
    parser.add_argument("--n-ctx", type=int, default=32_768, help="the served reader's window")
    parser.add_argument("--prefixes", action="store_true", help="read sessions cut to fit the window")
    parser.add_argument("--cache", type=Path, help="keep the reader's answers here (re-runs send nothing)")
    args = parser.parse_args(argv)
    window = args.n_ctx if args.gguf else 8_192
    started = time.monotonic()
    choose = chosen_prefixes if args.prefixes else chosen_sessions
    chosen = choose(args.sessions, window)  # folds (asyncio.run) before the reader's loop
    print(f"chose {len(chosen)} sessions in {time.monotonic() - started:.0f} s", flush=True)

    async def run() -> None:
        context = served_reader(args.gguf, args.n_ctx) if args.gguf else packaged_reader()
        async with context as reader:
            await read_all(chosen, reader, args.cap, args.replicates, args.cache)

    asyncio.run(run())


if __name__ == "__main__":
    main()
