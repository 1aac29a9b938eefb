"""``foldlog compact PATH``: fold a session's older history into a digest now (trigger ``manual``)."""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from foldlog.cli.common import config_from_args, session_path
from foldlog.cli.live import LiveSink
from foldlog.cli.main import EXIT_OK


class _NoSummary:
    """Stands in for a provider under ``--mechanical``: any summary call fails at once, so the
    compactor takes its documented mechanical fold instead of calling a model."""

    model = "mechanical"
    context_window: int | None = None

    def __init__(self, window: int | None) -> None:
        self.context_window = window

    def stream(self, request: Any) -> Any:
        from foldlog.errors import ProviderError

        raise ProviderError("--mechanical: no summary call")

    async def aclose(self) -> None:
        return None


async def _compact(args: argparse.Namespace) -> int:
    from foldlog.cli.agent_setup import make_options, make_provider
    from foldlog.compaction import Compactor
    from foldlog.session import Session

    cfg = config_from_args(args)
    path = session_path(args.path, cfg)
    sink = LiveSink()
    options = make_options(cfg)
    provider: Any = _NoSummary(options.context_window) if args.mechanical else make_provider(cfg)
    if options.context_window is None and getattr(provider, "context_window", None):
        import dataclasses

        options = dataclasses.replace(options, context_window=provider.context_window)
    try:
        if args.dry_run:
            session = Session.load(path)
            before = len(session.derive_messages())
            plan = Compactor(session, provider, options, sink).plan(force=True)
            print(f"{path}: {before} messages on the surface; {plan}")
            return EXIT_OK
        session = Session.open(path)
        try:
            before = len(session.derive_messages())
            await Compactor(session, provider, options, sink).compact("manual", args.focus, force=True)
            session.flush()
            after = len(session.derive_messages())
        finally:
            session.close()
    finally:
        await provider.aclose()
    sink.finish()
    print(f"{path}: {before} → {after} messages on the surface")
    return EXIT_OK


def cmd_compact(args: argparse.Namespace) -> int:
    return asyncio.run(_compact(args))
