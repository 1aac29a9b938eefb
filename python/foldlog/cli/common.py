"""Helpers shared by the CLI verbs: configuration from arguments, session lookup, output."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.config import Config, load_config

if TYPE_CHECKING:
    from rich.console import Console


def config_from_args(args: argparse.Namespace) -> Config:
    flags: dict[str, Any] = {"home": getattr(args, "home", None)}
    for key in ("provider", "model", "base_url", "max_steps", "context_window", "workspace"):
        flags[key] = getattr(args, key, None)
    if getattr(args, "show_reasoning", False):
        flags["show_reasoning"] = True
    return load_config(flags)


def session_path(ref: str, cfg: Config) -> Path:
    """A session log named by path or id; a clear error when there is none."""
    from foldlog.cli.store import resolve

    return resolve(ref, cfg.sessions_dir)


def console(stderr: bool = False, *, markup: bool = True) -> Console:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False, soft_wrap=True, markup=markup)


def shorten(text: str, limit: int) -> str:
    """Head and tail of ``text`` with a marker saying how much was left out."""
    if limit <= 0 or len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n… [{len(text) - limit} characters not shown] …\n{text[-tail:]}"


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


def surface_tokens(messages: Any, model: str | None) -> tuple[int, str]:
    """Prompt tokens ``messages`` cost for ``model`` and how they were counted (tokenizer name)."""
    from foldlog.errors import FoldlogError
    from foldlog.tokens import DEFAULT_MODEL, Tokenizer

    try:
        tokenizer = Tokenizer.for_model(model or DEFAULT_MODEL)
    except FoldlogError:
        # the model's tokenizer data is missing: the core's estimate, labelled as such
        tokenizer = Tokenizer.estimate()
    return tokenizer.count_request(messages), tokenizer.name
