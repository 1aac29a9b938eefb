"""``foldlog log view`` (a session as one self-contained HTML page) and ``foldlog log context``
(what fills the window: a request's tokens by category), and chat's ``/context``.

The page is `foldlog.interchange.exports.view.render`'s; the breakdown is
`foldlog.log.context.breakdown`'s. This module resolves what a stored session does not say —
the context window and the compaction settings (``--context-window``, else foldlog.toml's,
else the known window of the model the session names) — and writes the results.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import config_from_args, int_arg, session_path
from foldlog.cli.exits import EXIT_OK

if TYPE_CHECKING:
    from foldlog.cli.config import Config
    from foldlog.log.context import ContextBreakdown
    from foldlog.log.session import Session


def add_parser(log_verbs: Any) -> None:
    """``log view`` and ``log context``."""
    view = log_verbs.add_parser("view", help="write a session as one self-contained HTML page")
    view.add_argument("path", metavar="PATH|ID")
    view.add_argument("-o", "--output", metavar="FILE.html", help="where to write it (default: ID.html here)")
    view.add_argument(
        "--no-redact", action="store_true", help="keep secrets (API keys, tokens) as they are in the log"
    )
    view.add_argument("--no-subagents", action="store_true", help="leave the sub-agent and fork sessions out")
    view.add_argument(
        "--context-window", type=int_arg(1), help="the window drawn in the context bar (tokens)"
    )
    view.set_defaults(func=cmd_view)
    context = log_verbs.add_parser("context", help="what fills the context window, by category")
    context.add_argument("path", metavar="PATH|ID")
    context.add_argument(
        "--at", type=int_arg(0), metavar="SEQ", help="the request made before event SEQ (default: the next)"
    )
    context.add_argument("--json", action="store_true", help="print JSON: categories, total, window")
    context.add_argument("--model", help="count with this model's tokenizer (default: the session's)")
    context.add_argument("--context-window", type=int_arg(1), help="context window in tokens")
    context.set_defaults(func=cmd_context)


def window_for(session: Session, cfg: Config, flag: int | None, model: str | None = None) -> int | None:
    """The context window: ``flag``, else foldlog.toml's, else the known window of the model the
    session is counted as (DeepSeek's table, Anthropic's models), else unknown."""
    if flag:
        return flag
    configured = cfg.get("context_window")
    if configured:
        return int(configured)
    name = session.counting_model(model) or ""
    from foldlog.providers.http.deepseek import CONTEXT_WINDOWS

    if name in CONTEXT_WINDOWS:
        return CONTEXT_WINDOWS[name]
    if name.startswith("claude"):
        from foldlog.providers.anthropic.provider import CONTEXT_WINDOW

        return CONTEXT_WINDOW
    return None


def context_of(
    session: Session,
    cfg: Config,
    *,
    window: int | None,
    at_seq: int | None = None,
    model: str | None = None,
) -> ContextBreakdown:
    """The breakdown with the compaction settings of ``cfg`` (the trigger, the planner's split)."""
    from foldlog.cli.agent_setup import make_options
    from foldlog.log.context import breakdown, request_tools

    settings = make_options(cfg).compaction(window)
    return breakdown(
        session,
        at_seq=at_seq,
        model=model,
        tools=request_tools(session, at_seq),
        window=window,
        compact_ratio=settings.compact_ratio,
        plan=settings.plan_kwargs(force=True),
    )


def cmd_context(args: argparse.Namespace) -> int:
    from foldlog.log.session import Session

    cfg = config_from_args(args)
    session = Session.load(session_path(args.path, cfg))
    window = window_for(session, cfg, args.context_window, args.model)
    result = context_of(session, cfg, window=window, at_seq=args.at, model=args.model)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print("\n".join(result.lines()))
    return EXIT_OK


def cmd_view(args: argparse.Namespace) -> int:
    from foldlog.interchange.exports.view import render
    from foldlog.log.session import Session

    cfg = config_from_args(args)
    path = session_path(args.path, cfg)
    session = Session.load(path)
    window = window_for(session, cfg, args.context_window)
    folder = None if args.no_subagents else path.parent
    context = context_of(session, cfg, window=window)
    page = render(session, folder, redact=not args.no_redact, context=context)
    out = Path(args.output) if args.output else Path(f"{session.id}.html")
    page.write(out)
    redacted = sum(page.redacted.values())
    extra = f", {len(page.sessions) - 1} sub-agent/fork session(s)" if len(page.sessions) > 1 else ""
    note = f", {redacted} secret(s) redacted" if redacted else ""
    print(f"{out}: {len(page.html):,} bytes{extra}{note}", file=sys.stderr)
    return EXIT_OK


async def chat_context(chat: Any, _: str) -> None:
    """Chat's ``/context``: the next request's breakdown, with the chat's model and window."""
    result = context_of(chat.session, chat.cfg, window=chat.window(), model=chat.model)
    for line in result.lines():
        chat.out.print(line)


__all__ = ["add_parser", "chat_context", "cmd_context", "cmd_view", "context_of", "window_for"]
