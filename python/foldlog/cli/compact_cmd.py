"""``foldlog compact PATH``: fold a session's older history into a digest now (trigger ``manual``)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from typing import Any

from foldlog.cli.common import config_from_args, session_path
from foldlog.cli.live import LiveSink
from foldlog.cli.main import EXIT_OK

# the window assumed when --mechanical is given without --context-window (no provider to ask)
MECHANICAL_WINDOW = 128_000


class _MechanicalSink(LiveSink):
    """Under ``--mechanical`` the missing summary is what was asked for: no warning about it."""

    def _on_Notice(self, event: Any) -> None:
        if "summary was unavailable" not in event.message:
            super()._on_Notice(event)


class _NoSummary:
    """The provider under ``--mechanical``: its stream ends at once with no text, so the compactor
    takes its documented mechanical fold instead of calling a model."""

    model = "mechanical"

    def __init__(self, window: int) -> None:
        self.context_window = window

    async def stream(self, request: Any) -> Any:
        from foldlog.providers.base import Done

        yield Done("stop")

    async def aclose(self) -> None:
        return None


def _describe_plan(session: Any, options: Any) -> str:
    from foldlog import planning  # type: ignore[attr-defined,unused-ignore]

    messages = session.derive_messages()
    tokens = planning.token_counts(session, messages)
    _, plan = planning.plan(messages, tokens, **planning.plan_kwargs(options, force=True))
    if getattr(plan, "skipped", None) or not getattr(plan, "should_fold", True):
        return f"nothing to fold ({getattr(plan, 'skipped', None) or 'below the fold threshold'})"
    return (
        f"would fold {len(plan.fold)} message(s) (keeping {len(plan.kept)} of them in place, "
        f"the first {plan.head} pinned and the last {len(messages) - plan.tail_start} as the tail); "
        f"≈{plan.tokens_before} → ≈{plan.tokens_after} tokens before the digest"
    )


async def _compact(args: argparse.Namespace) -> int:
    from foldlog.cli.agent_setup import make_options, make_provider
    from foldlog.compaction import Compactor  # type: ignore[import-not-found,unused-ignore]
    from foldlog.session import Session

    cfg = config_from_args(args)
    path = session_path(args.path, cfg)
    sink = _MechanicalSink() if args.mechanical else LiveSink()
    options = make_options(cfg)
    provider: Any
    if args.mechanical:
        provider = _NoSummary(options.context_window or MECHANICAL_WINDOW)
    else:
        provider = make_provider(cfg)
    if options.context_window is None and getattr(provider, "context_window", None):
        options = dataclasses.replace(options, context_window=provider.context_window)
    try:
        if args.dry_run:
            session = Session.load(path)
            before = len(session.derive_messages())
            print(f"{path}: {before} messages on the surface; {_describe_plan(session, options)}")
            return EXIT_OK
        session = Session.open(path)
        try:
            before = len(session.derive_messages())
            result = await Compactor(session, provider, options, sink).compact(
                "manual", args.focus, force=True
            )
            session.flush()
            after = len(session.derive_messages())
        finally:
            session.close()
    finally:
        await provider.aclose()
    sink.finish()
    if result is None or not getattr(result, "folded", 0):
        print(f"{path}: nothing to fold ({before} messages on the surface)")
        return EXIT_OK
    how = "mechanical fold" if result.mechanical else "summary"
    print(
        f"{path}: folded {result.folded} message(s) into a {how}; {before} → {after} messages on the surface"
    )
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    return asyncio.run(_compact(args))
