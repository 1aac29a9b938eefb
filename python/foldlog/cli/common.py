"""Helpers shared by the CLI verbs: configuration from arguments, session lookup, output."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.cli.config import FLAG_KEYS, Config, load_config

if TYPE_CHECKING:
    from rich.console import Console

PROVIDERS = ("local", "deepseek", "openai", "anthropic", "openai-compatible")


def int_arg(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number ``>= minimum``. A bad value is argparse's usage error
    naming the argument (``argument -n/--limit: must be >= 0, got -1``), exit 2, never a
    traceback."""

    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
        return value

    parse.__name__ = f"int>={minimum}"
    return parse


def float_arg(minimum: float, *, inclusive: bool = True) -> Callable[[str], float]:
    """An argparse ``type``: a finite number ``>= minimum`` (``> minimum`` unless ``inclusive``);
    ``nan``, ``inf`` and words are usage errors naming the argument."""

    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        if value < minimum or (value == minimum and not inclusive):
            raise argparse.ArgumentTypeError(f"must be {'>=' if inclusive else '>'} {minimum:g}, got {text}")
        return value

    parse.__name__ = f"float>{'=' if inclusive else ''}{minimum:g}"
    return parse


def add_agent_options(p: argparse.ArgumentParser) -> None:
    """The options of the verbs that run an agent (``run``, ``chat``)."""
    p.add_argument(
        "--provider", choices=PROVIDERS, help="model provider (default from foldlog.toml, else local)"
    )
    p.add_argument("--model", help="model name")
    p.add_argument("--base-url", help="API base URL (openai-compatible servers)")
    p.add_argument("--session", metavar="PATH|ID", help="continue this session (a log path or an id)")
    p.add_argument(
        "-c",
        "--continue",
        dest="continue_latest",
        action="store_true",
        help="continue the most recent session",
    )
    p.add_argument("--max-steps", type=int_arg(1), help="step budget per turn")
    p.add_argument(
        "--context-window", type=int_arg(1), help="context window in tokens (overrides the provider's)"
    )
    p.add_argument("--workspace", metavar="DIR", help="folder the file tools are rooted in (default: .)")
    p.add_argument("--bash", action="store_true", help="enable the bash tool (off by default)")
    p.add_argument(
        "--force-tool",
        metavar="NAME",
        help="the first step of each turn must call this tool (small local models need the nudge)",
    )
    p.add_argument("--show-reasoning", action="store_true", help="print the model's reasoning")
    p.add_argument(
        "--cost-limit",
        type=float_arg(0.0),
        metavar="USD",
        help="stop the session before it spends more (docs/cost.md)",
    )
    p.add_argument(
        "--token-budget", type=int_arg(0), metavar="N", help="stop the session before it uses more tokens"
    )
    p.add_argument(
        "--mcp",
        metavar="FILE",
        help='MCP servers as tools: a JSON file {"mcpServers": {NAME: {command, args, env} | {url, ...}}}',
    )


def config_from_args(args: argparse.Namespace) -> Config:
    flags: dict[str, Any] = {"home": getattr(args, "home", None)}
    for key in FLAG_KEYS:
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
    from foldlog.log.tokens import DEFAULT_MODEL, Tokenizer

    try:
        tokenizer = Tokenizer.for_model(model or DEFAULT_MODEL)
    except FoldlogError:
        # the model's tokenizer data is missing: the core's estimate, labelled as such
        tokenizer = Tokenizer.estimate()
    return tokenizer.count_request(messages), tokenizer.name
