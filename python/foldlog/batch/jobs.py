"""The per-session work of each batch job, run by a worker on one item.

Every job calls foldlog's own paths: `Session.load` / `from_bytes`, `Session.stats` and
`token_count` (``stats``), `Compactor.plan` and a mechanical `Compactor.compact` with the real
stuck guard after it (``compact-eval``), the interchange registries (``import``, ``export``).
Nothing here re-derives, re-counts or re-plans. A session that fails is a row with its
``error``; the job goes on.

Rows are plain dicts of JSON scalars, the same whichever engine runs them.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from foldlog.batch.cost import session_cost, usage_cost
from foldlog.batch.grid import GridPoint
from foldlog.batch.sources import Item
from foldlog.errors import ConfigError, OutputExistsError
from foldlog.log.grammar.reader import latest_model
from foldlog.log.stats import log_stats

if TYPE_CHECKING:
    from foldlog.compaction.settings import Strategy
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider

JobName = Literal["stats", "compact-eval", "import", "export"]
JOBS: tuple[JobName, ...] = ("stats", "compact-eval", "import", "export")
ROLES = ("system", "user", "assistant", "tool")

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class JobSpec:
    """What a job does to each item: sent once to every worker (it must pickle).

    ``model``: the tokenizer (and, without a logged model, the price) sessions are counted
    with (default: each session's own, `Session.counting_model`); ``grid``: compact-eval's
    points; ``summary_provider``: a zero-argument factory of the provider compact-eval
    summarises with (``None``: mechanical folds only); ``out_dir``: where
    ``import`` writes logs and ``export`` writes files; ``export_format`` / ``wire``: export's
    format and normalizer; ``force``: overwrite existing files; ``branches``: what ``import``
    does with a transcript's abandoned branches (`foldlog.interchange.BRANCHES`, as ``log
    import --branches``).
    """

    job: JobName
    model: str | None = None
    grid: tuple[GridPoint, ...] = ()
    summary_provider: Callable[[], Provider] | None = None
    out_dir: str | None = None
    export_format: str = "openai"
    wire: bool = False
    force: bool = False
    branches: str = "current"
    #: compact-eval: probe survival (tier 0) columns, docs/compaction-benchmark.md
    probes: bool = False
    #: compact-eval tiers 1 and 2 (need ``probes``): factories of the reader and the judge,
    #: probes per reader prompt, replicates, and the folder model calls are cached in
    reader: Callable[[], Provider] | None = None
    judge: Callable[[], Provider] | None = None
    probes_per_prompt: int = 8
    replicates: int = 3
    cache_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: compact-eval: the strategies compared, one row each (``()``: ``summary`` with a summary
    #: provider, else ``mechanical``); ``summary`` needs the summary provider
    strategies: tuple[Strategy, ...] = ()

    def __post_init__(self) -> None:
        from foldlog.compaction.settings import STRATEGIES

        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown:
            raise ConfigError(f"strategies: unknown strategy {unknown[0]!r} (known: {', '.join(STRATEGIES)})")
        if "summary" in self.strategies and self.summary_provider is None:
            raise ConfigError("strategies: 'summary' needs a summary provider (--summary-provider)")

    @property
    def compared(self) -> tuple[Strategy, ...]:
        """The strategies compact-eval runs."""
        if self.strategies:
            return self.strategies
        return ("summary",) if self.summary_provider is not None else ("mechanical",)


def run_item(spec: JobSpec, item: Item) -> list[Row]:
    """The rows of one item; never raises for a bad session (its row holds the error)."""
    if spec.job == "import" and item.kind == "foreign":
        return _import_transcripts(spec, item)
    rows: list[Row] = []
    try:
        for index, name, loaded in _sessions(item):
            base: Row = {"source": item.key, "index": index, "session": name}
            try:
                if isinstance(loaded, BaseException):
                    raise loaded
                rows += [{**base, **r, "error": None} for r in _JOB_ROWS[spec.job](spec, item, *loaded)]
            except Exception as exc:
                rows.append({**base, "error": _error_text(exc)})
    except Exception as exc:  # the item itself could not be read (missing file, bad transcript)
        rows.append({"source": item.key, "index": 0, "session": None, "error": _error_text(exc)})
    return rows


def _error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


# --- reading the sessions of an item ------------------------------------------------------------


Loaded = tuple["Session", "Session | None"]


def _sessions(item: Item) -> Iterator[tuple[int, str | None, Loaded | BaseException]]:
    """``(index, session id, (session, recorded))`` for each session an item holds: the session
    as loaded (the load normalizer applied), and for a converted transcript the session the
    importer recorded (what ``import`` writes; ``None`` for stored logs). A transcript that
    cannot be recorded comes as its exception (its row then says why)."""
    from foldlog.log.session import Session

    if item.kind == "log":
        session = Session.load(item.ref)
        yield 0, session.id, (session, None)
    elif item.kind == "postgres":
        data = _postgres_store(item.dsn or "").read_log(item.ref)
        session = Session.from_bytes(data, source=item.key)
        yield 0, session.id, (session, None)
    else:
        from foldlog.interchange import convert, write_conversation
        from foldlog.stores.base import safe_session_id

        stem = Path(item.ref).stem
        for index, conv in enumerate(convert(item.format or "", item.ref)):
            sid = safe_session_id(conv.id or f"{stem}-{index}")
            try:
                fresh = Session(id=sid, meta={"imported": conv.meta})
                write_conversation(conv, fresh)
                # read back as a stored log is (the load normalizer applied, its repairs reported)
                loaded = Session.from_bytes(fresh.to_bytes(), source=f"{item.key}#{index}")
                yield index, sid, (loaded, fresh)
            except Exception as exc:
                yield index, sid, exc


_STORES: dict[str, Any] = {}


def _postgres_store(dsn: str) -> Any:
    """One store (connection pool) per DSN per worker process, kept for the worker's life."""
    store = _STORES.get(dsn)
    if store is None:
        from foldlog.stores.postgres import PostgresStore

        store = _STORES[dsn] = PostgresStore(dsn, max_readers=1)
    return store


# --- stats ---------------------------------------------------------------------------------------


def logged_model(session: Session) -> str | None:
    """The model of the session's latest ``request/header`` (what it was billed as), if any."""
    return latest_model(session.events)


def _stats(spec: JobSpec, item: Item, session: Session, recorded: Session | None) -> list[Row]:
    stats = log_stats(session)
    # counted as --model, else as the model the log names (the session's one rule)
    model = session.counting_model(spec.model)
    tokens = session.token_count(model)
    usage = stats["usage"]
    billed = logged_model(session)
    # each request at the model its log names, else at --model when given: never at a guess
    cost, currency = session_cost(session, spec.model)
    by_role = stats["messages"]
    row: Row = {
        "events": stats["events"],
        "turns": stats["turns"],
        "steps": stats["steps"],
        **{f"messages_{role}": int(by_role.get(role, 0)) for role in ROLES},
        "surface_messages": stats["surface_messages"],
        "tool_calls": stats["tool_calls"],
        "tool_results": stats["tool_results"],
        "tokens": int(tokens),
        "tokens_exact": bool(tokens.exact),
        "tokenizer": session.tokenizer(model).name,
        "tokens_model": model,
        "prompt_tokens": int(usage.get("promptTokens", 0)),
        "completion_tokens": int(usage.get("completionTokens", 0)),
        "cache_hit_tokens": int(usage.get("cacheHitTokens", 0)),
        "cache_miss_tokens": int(usage.get("cacheMissTokens", 0)),
        "model": billed,
        "cost": cost,
        "currency": currency,
        "compactions": stats["compactions"],
        "unfinished_compactions": stats["unfinished_compactions"],
        "needs_repair": bool(session.normalized_dirty),
    }
    return [row]


# --- compact-eval --------------------------------------------------------------------------------


def _compact_eval(spec: JobSpec, item: Item, session: Session, recorded: Session | None) -> list[Row]:
    from foldlog.log.session import Session as SessionClass

    model = session.counting_model(spec.model)  # --model, else the log's (the session's rule)
    session.model = model
    tokens = session.token_count(model)  # counts every message once; the bytes below keep the counts
    data = session.to_bytes()
    rows = []
    for point in spec.grid:
        for strategy in spec.compared:
            fresh = SessionClass.from_bytes(data, source=item.key)
            fresh.model = model
            row = asyncio.run(_evaluate(spec, fresh, point, int(tokens), strategy))
            rows.append({**point_columns(point), "strategy": strategy, **row})
    return rows


def point_columns(point: GridPoint) -> Row:
    return {"window": point.window, "tail_tokens": point.tail_tokens, "keep_policy": point.keep_policy}


async def _evaluate(
    spec: JobSpec, session: Session, point: GridPoint, tokens: int, strategy: Strategy
) -> Row:
    """Plan at ``point``, fold once (mechanically, or with the summary provider), then let the
    real auto-compaction trigger run for ``stuck_limit`` steps to see whether its stuck guard
    latches (the folded surface still past the trigger)."""
    from foldlog.compaction import Compactor
    from foldlog.compaction.probes import probes_for_plan
    from foldlog.compaction.summary import NoSummary
    from foldlog.compaction.survival import after_fold
    from foldlog.events import Usage as UsageEvent

    settings = dataclasses.replace(point.settings(), strategy=strategy)
    usage: list[Any] = []

    def emit(event: Any) -> None:
        if isinstance(event, UsageEvent):
            usage.append(event)

    provider: Any = spec.summary_provider() if spec.summary_provider is not None else NoSummary(point.window)
    try:
        compactor = Compactor(session, provider, settings, emit)
        preview = compactor.plan(force=False)
        probes = probes_for_plan(session, preview) if spec.probes else []
        unfolded = session.derive_messages() if spec.reader is not None else []  # tier 1's baseline
        result = await compactor.compact("manual", force=False)
        # tier 0 on the surface right after the fold (before the stuck-guard steps below)
        survival = after_fold(probes, session, preview.tokens_before, result) if spec.probes else None
        models = await model_tiers(spec, survival, unfolded, session) if survival is not None else {}
        summary_usage = list(usage)
        stuck = False
        if result is not None and (result.folded or result.masked):
            for _ in range(settings.stuck_limit):
                await compactor.maybe_compact(None)
            stuck = compactor.stuck
    finally:
        await provider.aclose()
    folded = result is not None and (result.folded > 0 or result.masked > 0)
    after = result.tokens_after if result is not None and folded else preview.tokens_before
    row: Row = {
        "tokens": tokens,
        "triggered": tokens >= point.window * settings.compact_ratio,
        "messages": preview.messages,
        "pinned": preview.pinned,
        "tail": preview.tail,
        "tokens_before": preview.tokens_before,
        "tokens_after": after,
        "saved": preview.tokens_before - after,
        "folded": result.folded if result is not None else 0,
        "masked": result.masked if result is not None else 0,
        "kept": result.kept if result is not None else preview.kept,
        "digest_tokens": result.digest_tokens if result is not None else 0,
        "skipped": preview.skipped,
        "uneconomic": preview.skipped == "uneconomic",
        "stuck": stuck,
        "mechanical": bool(result.mechanical) if result is not None else None,
        "tokenizer": preview.tokenizer,
    }
    if survival is not None:
        row.update(survival.columns())
        row.update(models)
    if spec.summary_provider is not None:
        prompt = sum(u.prompt_tokens for u in summary_usage)
        completion = sum(u.completion_tokens for u in summary_usage)
        cost, currency = usage_cost(
            {
                "promptTokens": prompt,
                "completionTokens": completion,
                "cacheHitTokens": sum(u.cache_hit_tokens for u in summary_usage),
                "cacheMissTokens": sum(u.cache_miss_tokens for u in summary_usage),
            },
            provider.model,
        )
        row.update(
            {
                "summary_prompt_tokens": prompt,
                "summary_completion_tokens": completion,
                "summary_cost": cost,
                "summary_currency": currency,
            }
        )
    return row


async def model_tiers(spec: JobSpec, survival: Any, unfolded: Sequence[Any], session: Session) -> Row:
    """Tier 1 (``spec.reader``: recall on the folded surface and on the unfolded one) and tier 2
    (``spec.judge``) of one fold, their calls cached in ``spec.cache_dir``
    (docs/compaction-benchmark.md). No probes (nothing folded): the columns are there, empty."""
    from foldlog.compaction.judge import DIMENSIONS, judge
    from foldlog.compaction.model_cache import ModelCache
    from foldlog.compaction.probes import SCORED
    from foldlog.compaction.reader import read, recall_columns

    row: Row = {}
    cache = ModelCache(Path(spec.cache_dir) if spec.cache_dir else None)
    after = session.derive_messages()
    if spec.reader is not None:
        if survival.probes:
            reader = spec.reader()
            try:
                kw: Any = {
                    "cache": cache,
                    "per_prompt": spec.probes_per_prompt,
                    "replicates": spec.replicates,
                }
                folded = await read(reader, survival.probes, after, **kw)
                base = await read(reader, survival.probes, unfolded, **kw)
            finally:
                await reader.aclose()
            row.update(recall_columns(folded, base))
        else:
            empty = ("recall_", "recall_base_", "recall_spread_")
            row.update({f"{k}{c}": None for c in SCORED for k in empty})
            row["baseline_cut"] = row["folded_cut"] = None
    if spec.judge is not None:
        if survival.probes:
            judge_provider = spec.judge()
            try:
                row.update(await judge(judge_provider, survival.probes, after, cache=cache))
            finally:
                await judge_provider.aclose()
        else:
            row.update({f"judge_{d}": None for d in (*DIMENSIONS, "overall")})
    if spec.reader is not None or spec.judge is not None:
        row["model_calls"] = cache.misses
        row["model_cache_hits"] = cache.hits
    return row


# --- import / export -----------------------------------------------------------------------------


def _import(spec: JobSpec, item: Item, session: Session, recorded: Session | None) -> list[Row]:
    """Write a stored log as it is (repairs are not written in — ``foldlog log repair`` appends
    them); foreign transcripts go through `_import_transcripts`."""
    out = Path(spec.out_dir or ".")
    target = out / f"{session.id}.jsonl"
    _claim(target, spec.force)
    (recorded or session).save(target)
    stats = log_stats(session)
    return [
        {
            "path": str(target),
            "events": stats["events"],
            "turns": stats["turns"],
            "tool_calls": stats["tool_calls"],
            "compactions": stats["compactions"],
            "needs_repair": bool(session.normalized_dirty),
        }
    ]


def _import_transcripts(spec: JobSpec, item: Item) -> list[Row]:
    """A foreign transcript through the import driver `log import` uses
    (`foldlog.interchange.import_logs`): every conversation of the file with its sub-agent and
    fork children, one row per log written (a conversation that fails is one row with its
    error; the others are still written)."""
    from foldlog.interchange import convert
    from foldlog.interchange.import_logs import check_targets, plan_logs, write_logs
    from foldlog.stores.base import safe_session_id

    try:
        conversations = convert(item.format or "", item.ref, branches=spec.branches)
    except Exception as exc:  # the file itself could not be read (missing, not a transcript)
        return [{"source": item.key, "index": 0, "session": None, "error": _error_text(exc)}]
    out = Path(spec.out_dir or ".")
    stem = Path(item.ref).stem
    rows: list[Row] = []
    for index, conv in enumerate(conversations):
        sid = safe_session_id(conv.id or f"{stem}-{index}")
        base: Row = {"source": item.key, "index": index}
        try:
            plan = plan_logs(conv, out / f"{sid}.jsonl", sid)
            check_targets(
                plan, force=spec.force, hint="another source with this session id? --force overwrites"
            )
            written = write_logs(plan)
        except Exception as exc:
            rows.append({**base, "session": sid, "error": _error_text(exc)})
            continue
        for log in written:
            parent = log["parent"] or {}
            rows.append(
                {
                    **base,
                    "session": log["id"],
                    "path": log["path"],
                    "parent": parent.get("id"),
                    "link": parent.get("kind"),
                    "events": log["events"],
                    "turns": log["turns"],
                    "tool_calls": log["tool_calls"],
                    "tool_results": log["tool_results"],
                    "compactions": log["compactions"],
                    "needs_repair": bool(log["needs_repair"]),
                    "warnings": len(log["warnings"]),
                    "left_out": "; ".join(log["left_out"]),
                    "error": None,
                }
            )
    return rows


def _export(spec: JobSpec, item: Item, session: Session, recorded: Session | None) -> list[Row]:
    from foldlog.interchange.exports import export, suffix

    exported = export(session, spec.export_format, wire=spec.wire)
    target = Path(spec.out_dir or ".") / f"{session.id}{suffix(spec.export_format)}"
    _claim(target, spec.force)
    written = exported.write(target)
    size = sum(p.stat().st_size for p in written)
    # what the format could not carry, per session (the CLI's notes): a table column, not lost
    notes = "; ".join(exported.warnings)
    return [
        {
            "path": str(target),
            "messages": len(session.derive_messages()),
            "bytes": size,
            "warnings": len(exported.warnings),
            "notes": notes,
        }
    ]


def _claim(target: Path, force: bool) -> None:
    """Make the folder; refuse to overwrite a file unless forced (two sources naming the same
    session would otherwise overwrite each other silently)."""
    from foldlog.stores.file import private_folder

    private_folder(target.parent)
    if target.exists():
        if not force:
            raise OutputExistsError(
                f"{target} exists (another source with this session id? --force overwrites)"
            )
        target.unlink()


_JOB_ROWS: dict[str, Callable[[JobSpec, Item, Session, Session | None], list[Row]]] = {
    "stats": _stats,
    "compact-eval": _compact_eval,
    "import": _import,
    "export": _export,
}


def run_shard(spec: JobSpec, items: list[Item]) -> list[tuple[str, list[Row]]]:
    """A worker's unit: ``(item key, rows)`` for each item of a shard, in order."""
    return [(item.key, run_item(spec, item)) for item in items]


__all__ = [
    "JOBS",
    "ROLES",
    "JobName",
    "JobSpec",
    "Row",
    "logged_model",
    "point_columns",
    "run_item",
    "run_shard",
]
