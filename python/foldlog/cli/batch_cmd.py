"""``foldlog batch JOB SOURCE… -o OUT``: stats, compact-eval, import or export over many sessions,
on Ray (default: a local cluster started on demand), a cluster (``--address``), a local process
pool (``--engine local``) or serially. See docs/batch.md.

Exit codes: 0 when every session was processed (rows with errors are reported, and the code is
1 when any has one), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import TYPE_CHECKING, Any

from foldlog.cli.common import PROVIDERS, int_arg
from foldlog.cli.exits import EXIT_ERROR, EXIT_OK, UsageError

if TYPE_CHECKING:
    from foldlog.providers.base import Provider

JOBS = ("stats", "compact-eval", "import", "export")


def add_parser(verbs: Any) -> argparse.ArgumentParser:
    from foldlog.interchange import BRANCHES, FORMATS
    from foldlog.interchange.exports import EXPORT_FORMATS

    p: argparse.ArgumentParser = verbs.add_parser(
        "batch", help="stats, compact-eval, import or export over many sessions (Ray, a process pool)"
    )
    p.add_argument("job", choices=JOBS)
    p.add_argument(
        "sources", nargs="*", metavar="SOURCE", help="folders, files or globs (session ids with --dsn)"
    )
    p.add_argument(
        "-o",
        "--output",
        required=True,
        metavar="OUT",
        help="table (.parquet/.csv/.jsonl); a folder for import/export",
    )
    p.add_argument("--engine", choices=("ray", "local", "serial"), default="ray")
    p.add_argument("--address", help="a Ray cluster to run on (default: a local one, started on demand)")
    p.add_argument(
        "--workers", type=int_arg(1), help="processes (local) or CPUs of the local Ray cluster (default: all)"
    )
    p.add_argument(
        "--shard-size", type=int_arg(1), help="items per task (default: about 4 tasks per worker, at most 64)"
    )
    p.add_argument(
        "--from", dest="from_format", choices=tuple(FORMATS), help="sources are transcripts of this format"
    )
    p.add_argument("--dsn", help="read the sessions of this PostgreSQL store")
    p.add_argument(
        "--model",
        help="count tokens (and price unlabelled usage) as this model (default tokenizer: deepseek-v4's)",
    )
    grid = p.add_argument_group("compact-eval grid")
    grid.add_argument("--windows", help="context windows, comma-separated (32000,128k)")
    grid.add_argument("--tails", help="tail budgets in tokens, comma-separated")
    grid.add_argument("--keep", help="keep policies, comma-separated (errors,user_marked,none)")
    grid.add_argument(
        "--grid", metavar="TOML", help="the grid from a TOML file (windows, tail_tokens, keep_policies)"
    )
    grid.add_argument(
        "--summary-provider",
        choices=PROVIDERS,
        help="summarise each fold with this provider (default: mechanical folds)",
    )
    grid.add_argument("--summary-model")
    grid.add_argument(
        "--probes",
        action="store_true",
        help="add probe survival (tier 0) columns probes_<c>/survived_<c> (docs/compaction-benchmark.md)",
    )
    grid.add_argument("--summary-base-url")
    grid.add_argument(
        "--strategies",
        metavar="LIST",
        help="compaction strategies compared, one row each, comma-separated: mask,mechanical,summary,hybrid "
        "(default: summary with --summary-provider, else mechanical; summary needs --summary-provider)",
    )
    tiers = p.add_argument_group("compact-eval tiers 1 and 2 (docs/compaction-benchmark.md)")
    tiers.add_argument(
        "--reader", choices=PROVIDERS, help="tier 1: this provider answers the probes (recall_<c> columns)"
    )
    tiers.add_argument("--reader-model")
    tiers.add_argument("--reader-base-url")
    tiers.add_argument(
        "--judge",
        choices=PROVIDERS,
        help="tier 2: this provider scores each fold (judge_<dimension> columns)",
    )
    tiers.add_argument("--judge-model")
    tiers.add_argument("--judge-base-url")
    tiers.add_argument(
        "--probes-per-prompt", type=int_arg(1), default=8, metavar="K", help="probes per reader prompt (8)"
    )
    tiers.add_argument(
        "--replicates", type=int_arg(1), default=3, metavar="R", help="times each reader prompt is asked (3)"
    )
    tiers.add_argument(
        "--cache", metavar="DIR", help="model calls cached here (default: OUT.model-cache beside the table)"
    )
    p.add_argument(
        "--to", dest="export_format", choices=EXPORT_FORMATS, default="openai", help="export format"
    )
    p.add_argument("--wire", action="store_true", help="export: apply the strict send normalizer")
    p.add_argument("--force", action="store_true", help="import/export: overwrite existing files")
    p.add_argument(
        "--branches",
        choices=BRANCHES,
        default="current",
        help="import: abandoned branches left out and reported (current) or written as forks (all)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_batch)
    return p


def summary_provider(flags: dict[str, Any]) -> Provider:
    """The summary provider, built in each worker (a factory pickles; a live client does not)."""
    from foldlog.cli.agent_setup import make_provider
    from foldlog.cli.config import load_config

    return make_provider(load_config(flags))


def _points(args: argparse.Namespace) -> Any:
    from foldlog.batch import grid as grids

    if args.grid:
        if args.windows or args.tails or args.keep:
            raise UsageError("--grid replaces --windows/--tails/--keep: give one or the other")
        return grids.load_toml(args.grid)
    return grids.make_grid(
        grids.parse_ints(args.windows, "--windows") if args.windows else grids.DEFAULT_WINDOWS,
        grids.parse_ints(args.tails, "--tails") if args.tails else grids.DEFAULT_TAILS,
        [k.strip() for k in args.keep.split(",") if k.strip()] if args.keep else grids.DEFAULT_KEEPS,
    )


def cmd_batch(args: argparse.Namespace) -> int:
    import json

    from foldlog.batch import run_batch
    from foldlog.batch.summary import table_text
    from foldlog.errors import ConfigError

    factory = None
    if args.summary_provider:
        flags = {
            "provider": args.summary_provider,
            "model": args.summary_model,
            "base_url": args.summary_base_url,
        }
        factory = functools.partial(summary_provider, flags)
    reader = judge = None
    if args.reader:
        reader_flags = {"provider": args.reader, "model": args.reader_model, "base_url": args.reader_base_url}
        reader = functools.partial(summary_provider, reader_flags)
    if args.judge:
        judge_flags = {"provider": args.judge, "model": args.judge_model, "base_url": args.judge_base_url}
        judge = functools.partial(summary_provider, judge_flags)
    try:
        points = _points(args) if args.job == "compact-eval" else None
        report = run_batch(
            args.job,
            args.sources,
            out=args.output,
            engine=args.engine,
            address=args.address,
            workers=args.workers,
            from_format=args.from_format,
            dsn=args.dsn,
            model=args.model,
            points=points,
            summary_provider=factory,
            export_format=args.export_format,
            wire=args.wire,
            force=args.force,
            branches=args.branches,
            shard_size=args.shard_size,
            progress=False if args.no_progress else None,
            probes=args.probes,
            reader=reader,
            judge=judge,
            probes_per_prompt=args.probes_per_prompt,
            replicates=args.replicates,
            cache_dir=args.cache,
            strategies=[s.strip() for s in args.strategies.split(",") if s.strip()]
            if args.strategies
            else (),
        )
    except ConfigError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(report.summary, indent=2))
    else:
        print(table_text(report.summary))
        done = f"{report.ran} run, {report.skipped} already done"
        print(f"wrote {report.table} ({done}); summary {report.summary_path}", file=sys.stderr)
        if report.chart is not None:
            print(f"chart {report.chart}", file=sys.stderr)
    for row in report.rows:
        if row.get("error"):
            print(f"error: {row['source']}#{row['index']}: {row['error']}", file=sys.stderr)
    return EXIT_ERROR if report.summary["errors"] else EXIT_OK


__all__ = ["add_parser", "cmd_batch", "summary_provider"]
