"""Compaction: fold the middle of a long session into a digest, recorded in the log.

``Compactor.maybe_compact`` is the trigger the agent calls after every tool batch and before it
returns an answer (``spec/compaction.md``, "Trigger"); ``Compactor.compact`` runs one compaction
(``Agent.compact`` → trigger ``manual``, forced). Planning is the Rust planner
(:mod:`foldlog.planning`); the summary call and its fallback are :mod:`foldlog.summary`.

What a fold records (nothing is ever deleted; the folded events stay in the log)::

    compaction/start {id, trigger, focus?}
    tool/result …        (prune: replaces a large folded result, surfaceOp replace S..S)
    compaction/summary {id, summary, folded, kept, tokensBefore, tokensAfter, model, mechanical, archive?}
    user/message         (the digest, surfaceOp fold S..E keeping `kept`)
    compaction/end {id, error?}
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog import planning, summary
from foldlog._frozen import thaw
from foldlog.errors import CompactionError, FoldlogError

if TYPE_CHECKING:
    from foldlog.options import Options
    from foldlog.providers.base import Provider, Usage
    from foldlog.session import Session

ELISION = (
    "[elided tool result — {name}, {n} bytes dropped to save context; "
    "re-run the tool if the data is needed again]"
)


@dataclass(slots=True)
class CompactionResult:
    """What one compaction did."""

    id: str
    trigger: str
    folded: int = 0  # chat messages folded into the digest (0: nothing folded)
    kept: int = 0
    pruned: int = 0  # tool results elided
    summary: str = ""
    mechanical: bool = False
    archive: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0
    skipped: str | None = None
    folded_seqs: list[int] = field(default_factory=list)


def unfinished_compaction(session: Any) -> dict[str, Any] | None:
    """The ``compaction/start`` data of a compaction that started and never ended (a crash
    between start and end), with its ``seq``; ``None`` when every compaction finished."""
    seq = getattr(session, "unfinished_compaction", None)
    if seq is None:
        return None
    data = dict(session.events[seq]["data"])
    data["seq"] = seq
    return data


class Compactor:
    """Keeps one session inside its context window.

    ``emit`` receives :mod:`foldlog.events` dataclasses (``Notice``, ``CompactionStarted``,
    ``CompactionDone``, ``Usage`` with source ``compaction``). ``counter`` counts the tokens of
    each message; by default the session's exact counts when it has them, else an estimate.
    """

    def __init__(
        self,
        session: Session,
        provider: Provider,
        options: Options | None = None,
        emit: Callable[[Any], Any] | None = None,
        *,
        counter: planning.TokenCounter | None = None,
    ) -> None:
        if options is None:
            from foldlog.options import Options

            options = Options()
        self.session = session
        self.provider = provider
        self.options = options
        self._emit = emit or (lambda event: None)
        self._counter = counter
        self._fallback: planning.TokenCounter | None = None
        self._soft_noticed = False
        self.consecutive = 0
        self.stuck = False

    # --- the trigger -----------------------------------------------------------------------

    @property
    def window(self) -> int:
        return int(self.options.context_window or getattr(self.provider, "context_window", None) or 0)

    async def maybe_compact(self, prompt_tokens: int | None, tools: Sequence[Mapping[str, Any]] = ()) -> None:
        """Compact when the latest request's prompt passed ``compact_ratio`` of the window.

        ``prompt_tokens`` is the provider's count for the latest single request; ``None`` (no
        usage reported) falls back to counting the derived messages and the tools locally.
        Failures become a warning ``Notice``; nothing is raised but cancellation.
        """
        window = self.window
        if window <= 0:
            return
        opts = self.options
        measured = prompt_tokens if prompt_tokens is not None else self._local_prompt_tokens(tools)
        if measured < window * opts.compact_ratio:
            self.consecutive = 0
            self.stuck = False
            if measured >= window * opts.soft_compact_ratio and not self._soft_noticed:
                self._soft_noticed = True
                self._notice(
                    f"context at {measured / window:.0%} of the {window:,}-token window; "
                    f"it is compacted at {opts.compact_ratio:.0%}"
                )
            return
        if self.stuck:
            return
        force = measured >= window * opts.force_compact_ratio
        try:
            result = await self._run("auto", None, force, measured)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a failed compaction must never end the run
            self._notice(f"compaction failed: {e}", "warn")
            return
        if result is None or not result.folded:
            return
        self.consecutive += 1
        if self.consecutive >= opts.stuck_limit:
            self.stuck = True
            self._notice(
                f"auto-compaction paused after {self.consecutive} compactions on consecutive steps: the "
                f"{window:,}-token context window is too small for the recent tail plus the pinned prefix "
                "(use a larger window, a smaller tail_tokens, or compact manually)",
                "warn",
            )

    async def compact(
        self, trigger: str = "manual", focus: str | None = None, force: bool = False
    ) -> CompactionResult | None:
        """Run one compaction now (the stuck latch does not apply). Returns ``None`` when there
        is nothing to fold."""
        return await self._run(trigger, focus, force, None)

    # --- one compaction ----------------------------------------------------------------------

    def _counts(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        if self._counter is not None:
            return self._counter.count(messages)
        exact = self._session_counts()
        if exact is not None and len(exact) == len(messages):
            return exact
        if self._fallback is None:
            self._fallback = planning.model_counter(getattr(self.provider, "model", None))
        # not planning.token_counts: the session's counts are for its own model, not the provider's
        return self._fallback.count(messages)

    def _exact_model(self) -> str | None:
        """The provider's model when the session can count it exactly from its per-event cache."""
        from foldlog.tokens import Tokenizer

        model = getattr(self.provider, "model", None)
        if not isinstance(model, str) or not hasattr(self.session, "token_counts"):
            return None
        try:
            return model if Tokenizer.for_model(model).exact else None
        except FoldlogError:  # the tokenizer data is missing: plan on the estimate
            return None

    def _session_counts(self) -> list[int] | None:
        model = self._exact_model()
        return self.session.token_counts(model) if model is not None else None

    def _local_prompt_tokens(self, tools: Sequence[Mapping[str, Any]]) -> int:
        if self._counter is None:
            model = self._exact_model()
            if model is not None:
                # the session's running total: O(new messages) per step, exact, with the tools
                return self.session.token_count(model, tools)
        return sum(self._counts(self.session.derive_messages())) + planning.EstimateCounter().count_tools(
            tools
        )

    def _plan(self, force: bool) -> tuple[Any, Any, list[int], list[int], tuple[Mapping[str, Any], ...]]:
        messages = self.session.derive_messages()
        seqs = self.session.surface_seqs()
        if len(seqs) != len(messages):
            raise CompactionError(
                f"the session derived {len(messages)} messages but {len(seqs)} surface seqs"
            )
        settings = planning.plan_kwargs(self._plan_options(), force=force)
        model = self._exact_model() if self._counter is None else None
        if model is not None:
            # exact counts: the core builds the planner's input from the messages it derived
            # and the counts it keeps (same facts as planning.build_history, no Python pass)
            history = self.session.plan_history(model)
            if history is not None and len(history) == len(messages):
                tokens = history.tokens()
                return history, history.plan(**settings), seqs, tokens, messages
        tokens = self._counts(messages)
        history, plan = planning.plan(messages, tokens, **settings)
        return history, plan, seqs, tokens, messages

    def _plan_options(self) -> Any:
        opts = self.options
        if opts.context_window or not self.window:
            return opts
        import dataclasses

        return dataclasses.replace(opts, context_window=self.window)

    async def _run(
        self, trigger: str, focus: str | None, force: bool, measured: int | None
    ) -> CompactionResult | None:
        from foldlog.events import CompactionDone, CompactionStarted

        opts = self.options
        history, plan, seqs, tokens, messages = self._plan(force)
        prune = history.prune_candidates(plan, opts.prune_min_bytes) if trigger == "auto" else []
        if not plan.should_fold and not prune:
            if trigger != "auto":
                self._notice(f"nothing to compact ({plan.skipped})")
            return None

        number = self.session.events.types().count("compaction/start") + 1
        cid = f"compaction-{number}"
        result = CompactionResult(cid, trigger, tokens_before=plan.tokens_before)
        self._emit(CompactionStarted(trigger, focus))
        start: dict[str, Any] = {"id": cid, "trigger": trigger}
        if focus:
            start["focus"] = focus
        self.session.append_event("compaction/start", start)
        try:
            end = await self._body(
                result, plan, seqs, tokens, messages, prune, measured, force, number, focus
            )
        except BaseException as e:
            # the fold lands in one append or not at all; close the compaction with the error
            why = "cancelled" if isinstance(e, asyncio.CancelledError) else f"{type(e).__name__}: {e}"
            try:
                self.session.append_event("compaction/end", {"id": cid, "error": why})
            finally:
                self._emit(CompactionDone(trigger, 0, "", None, False))
            raise
        return self._finish(result, end)

    async def _body(
        self,
        result: CompactionResult,
        plan: Any,
        seqs: Sequence[int],
        tokens: Sequence[int],
        messages: Sequence[Mapping[str, Any]],
        prune: Sequence[int],
        measured: int | None,
        force: bool,
        number: int,
        focus: str | None,
    ) -> dict[str, Any]:
        """Prune, then fold; returns the ``compaction/end`` data."""
        cid = result.id
        if prune:
            saved = self._prune(messages, seqs, tokens, prune)
            result.pruned = len(prune)
            self._notice(f"elided {len(prune)} large tool result(s) in the fold region (~{saved:,} tokens)")
            trigger_at = self.window * self.options.compact_ratio
            if measured is not None and not force and measured - saved < trigger_at:
                result.skipped = "pruned"
                return {"id": cid, "pruned": len(prune)}
            _, plan, seqs, tokens, messages = self._plan(force)
            if not plan.should_fold:
                result.skipped = plan.skipped
                return {"id": cid, "pruned": len(prune), "skipped": plan.skipped}
        await self._fold(result, plan, seqs, messages, number, focus)
        return {"id": cid}

    def _finish(self, result: CompactionResult, end: dict[str, Any]) -> CompactionResult:
        from foldlog.events import CompactionDone

        self.session.append_event("compaction/end", end)
        self.session.flush()
        self._emit(
            CompactionDone(result.trigger, result.folded, result.summary, result.archive, result.mechanical)
        )
        return result

    def _prune(
        self,
        messages: Sequence[Mapping[str, Any]],
        seqs: Sequence[int],
        tokens: Sequence[int],
        indices: Sequence[int],
    ) -> int:
        """Replace each large folded tool result with the elision line; returns the tokens saved."""
        saved = 0
        counter = planning.EstimateCounter()
        for i in indices:
            seq = seqs[i]
            original = self.session.events[seq]
            data = thaw(original["data"])
            msg = data.get("message") if isinstance(data.get("message"), dict) else None
            if original["type"] != "tool/result" or msg is None:
                continue  # only recorded tool results are replaced (never a foreign shape)
            text = planning.message_text(messages[i])
            name = str(msg.get("toolName") or messages[i].get("name") or "tool")
            n = len(text.encode())
            msg["content"] = ELISION.format(name=name, n=n)
            data["meta"] = {**(data.get("meta") or {}), "elidedBytes": n}
            self.session.append_event(
                "tool/result",
                data,
                surface_op={"op": "replace", "start": seq, "end": seq},
                source_event_seqs=[seq],
            )
            saved += max(tokens[i] - counter.count_one({"role": "tool", "content": msg["content"]}), 0)
        return saved

    async def _fold(
        self,
        result: CompactionResult,
        plan: Any,
        seqs: Sequence[int],
        messages: Sequence[Mapping[str, Any]],
        number: int,
        focus: str | None,
    ) -> None:
        from foldlog.events import Usage as UsageEvent

        opts = self.options
        first, last = seqs[plan.head], seqs[plan.tail_start - 1]
        nodes = _surface_nodes(self.session)
        pos = {s: k for k, s in enumerate(nodes)}
        keep = [seqs[i] for i in plan.kept]
        keep_set = set(keep)
        removed = [s for s in nodes[pos[first] : pos[last] + 1] if s not in keep_set]
        folded = [messages[i] for i in plan.fold]
        if opts.archive_dir:
            result.archive = write_archive(Path(opts.archive_dir), self.session.id, number, folded)

        provider = opts.summary_provider or self.provider
        window = int(getattr(provider, "context_window", None) or self.window or 128_000)
        request = summary.summary_request(
            folded,
            focus=focus,
            max_chars=_transcript_chars(window),
            model=getattr(opts, "summary_model", None),
        )

        def on_usage(u: Usage) -> None:
            hit = u.cache_hit_tokens / u.prompt_tokens if u.prompt_tokens else 0.0
            self._emit(
                UsageEvent(
                    u.prompt_tokens,
                    u.completion_tokens,
                    u.cache_hit_tokens,
                    u.cache_miss_tokens,
                    hit,
                    None,
                    "compaction",
                )
            )

        outcome = await summary.summarize(provider, request, timeout=opts.summary_timeout, on_usage=on_usage)
        result.mechanical = not outcome.text
        if result.mechanical:
            where = result.archive or f"the session log, events #{removed[0]}–#{removed[-1]}"
            text = summary.mechanical_summary(len(folded), where)
            self._notice(f"the summary was unavailable ({outcome.error}); folded mechanically", "warn")
        else:
            text = outcome.text
        content = summary.digest_content(text)
        digest_tokens = planning.EstimateCounter().count_one({"role": "user", "content": content})
        result.summary = text
        result.folded = len(folded)
        result.kept = len(keep)
        result.folded_seqs = removed
        result.tokens_after = plan.tokens_after + digest_tokens
        record: dict[str, Any] = {
            "id": result.id,
            "summary": text,
            "folded": removed,
            "kept": keep,
            "tokensBefore": plan.tokens_before,
            "tokensAfter": result.tokens_after,
            "model": str(getattr(provider, "model", "") or ""),
            "mechanical": result.mechanical,
        }
        if result.archive:
            record["archive"] = result.archive
        self.session.append_event("compaction/summary", record)
        self.session.append_event(
            "user/message",
            {"role": "user", "content": content, "source": "compaction"},
            surface_op={"op": "fold", "start": first, "end": last, "keep": keep},
            source_event_seqs=removed,
        )
        self._soft_noticed = False

    def _notice(self, message: str, level: str = "info") -> None:
        from foldlog.events import Notice

        self._emit(Notice(message, level))  # type: ignore[arg-type]


def _transcript_chars(window: int) -> int:
    """Characters of transcript the summariser gets: its window less room for the reply and the
    instructions, at a conservative 3 characters per token."""
    reserve = min(16_384, window // 4) + 1_024
    return max(window - reserve, window // 4) * 3


def _surface_nodes(session: Any) -> list[int]:
    nodes = getattr(session, "surface_nodes", None)
    if callable(nodes):
        return list(nodes())
    return list(session._core.surface_nodes())


def write_archive(
    directory: Path, session_id: str, number: int, messages: Sequence[Mapping[str, Any]]
) -> str:
    """Write the folded messages as JSONL to ``<dir>/<UTC yyyymmdd-HHMMSS.mmm>-<session>-<n>.jsonl``,
    created 0600 (its folder 0700 when made here), never overwriting an existing file. Returns the path."""
    from foldlog.stores.file import private_folder

    private_folder(directory)
    now = time.time()
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}"
    base = f"{stamp}-{session_id}-{number}"
    body = "".join(json.dumps(thaw(m), ensure_ascii=False) + "\n" for m in messages).encode()
    for attempt in range(100):
        path = directory / (f"{base}.jsonl" if attempt == 0 else f"{base}.{attempt}.jsonl")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(body)
            f.flush()
            os.fsync(f.fileno())
        return str(path)
    raise CompactionError(f"could not create a new archive file for {base} in {directory}")


__all__ = ["ELISION", "CompactionResult", "Compactor", "unfinished_compaction", "write_archive"]
