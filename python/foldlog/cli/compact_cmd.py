"""``foldlog compact PATH``: fold a session's older history into a digest now (trigger ``manual``).

``--dry-run`` prints ``Compactor.plan(force=True)``, the planning call the run itself makes
(same session counts, same planner, same options), so the preview is what the run folds.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import PROVIDERS, config_from_args, int_arg, session_path
from foldlog.cli.exits import EXIT_OK
from foldlog.cli.live import LiveSink

if TYPE_CHECKING:
    from foldlog.agent.options import Options
    from foldlog.compaction import Compactor

# the window assumed when --mechanical is given without --context-window (no provider to ask)
MECHANICAL_WINDOW = 128_000


class _MechanicalSink(LiveSink):
    """Under ``--mechanical`` the missing summary is what was asked for: no warning about it."""

    def _on_Notice(self, event: Any) -> None:
        if "summary was unavailable" not in event.message:
            super()._on_Notice(event)


def _compactor(session: Any, provider: Any, options: Options, sink: Any, mechanical: bool) -> Compactor:
    """The compactor both the dry run and the run use, with the window resolved once (the
    options', else the provider's). Tokens are counted with the model's tokenizer; under
    ``--mechanical`` no model is asked, so with ``--model``'s, else by the session's own rule
    (`Session.counting_model`: the model its log names; the estimate for an imported session
    that names none)."""
    from foldlog.compaction import Compactor

    if session.model is None:
        session.model = options.model or (session.counting_model() if mechanical else provider.model)
    settings = options.compaction(options.context_window or provider.context_window)
    return Compactor(session, provider, settings, sink)


async def _compact(args: argparse.Namespace) -> int:
    from foldlog.cli.agent_setup import make_options, make_provider
    from foldlog.log.session import Session

    cfg = config_from_args(args)
    path = session_path(args.path, cfg)
    sink = _MechanicalSink() if args.mechanical else LiveSink()
    options = make_options(cfg)
    provider: Any
    if args.mechanical:
        from foldlog.compaction.summary import NoSummary

        provider = NoSummary(options.context_window or MECHANICAL_WINDOW)
    else:
        provider = make_provider(cfg)
    try:
        if args.dry_run:
            session = Session.load(path)
            preview = _compactor(session, provider, options, sink, args.mechanical).plan(force=True)
            what = f"would fold {preview.describe()}" if preview.should_fold else preview.describe()
            print(f"{path}: {preview.messages} messages on the surface; {what}")
            return EXIT_OK
        session = Session.open(path)
        try:
            before = len(session.derive_messages())
            compactor = _compactor(session, provider, options, sink, args.mechanical)
            result = await compactor.compact("manual", args.focus, force=True)
            session.flush()
            after = len(session.derive_messages())
        finally:
            session.close()
    finally:
        await provider.aclose()
    sink.finish()
    if result is None or not result.folded or result.preview is None:
        print(f"{path}: nothing to fold ({before} messages on the surface)")
        return EXIT_OK
    how = "mechanical fold" if result.mechanical else "summary"
    print(
        f"{path}: folded {result.preview.describe()}; into a {how} of {result.digest_tokens:,} tokens; "
        f"{before} → {after} messages on the surface"
    )
    return EXIT_OK


def add_parser(verbs: Any) -> None:
    compact = verbs.add_parser("compact", help="fold a session's history into a summary now")
    compact.add_argument("path", metavar="PATH|ID")
    compact.add_argument("--focus", metavar="TEXT", help="what the summary should keep")
    compact.add_argument("--provider", choices=PROVIDERS)
    compact.add_argument("--model")
    compact.add_argument("--base-url")
    compact.add_argument(
        "--context-window", type=int_arg(1), help="context window in tokens (overrides the provider's)"
    )
    compact.add_argument(
        "--mechanical",
        action="store_true",
        help="no summary call: fold with the structured digest (files, commands, errors, instructions, plan)",
    )
    compact.add_argument("--dry-run", action="store_true", help="show the plan, write nothing")
    compact.set_defaults(func=cmd_compact)


def cmd_compact(args: argparse.Namespace) -> int:
    return asyncio.run(_compact(args))
