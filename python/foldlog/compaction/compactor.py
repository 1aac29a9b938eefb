"""Compaction: fold the middle of a long session into a digest, recorded in the log.

``Compactor.maybe_compact`` is the trigger the agent calls after every tool batch and before it
returns an answer (``spec/compaction.md``, "Trigger"); ``Compactor.compact`` runs one compaction
(``Agent.compact`` → trigger ``manual``, forced). ``Compactor.plan`` is the planning call a
compaction makes and a preview shows (``foldlog compact --dry-run``): the planner's input built by
the core (``Session.plan_history``) with the session's tokenizer, planned by the Rust planner. The
summary call and its fallback are :mod:`foldlog.compaction.summary`.

What a fold records (nothing is ever deleted; the folded events stay in the log)::

    compaction/start {id, trigger, focus?, strategy}
    tool/result …        (mask/hybrid: a stub for an old result, surfaceOp mask S; masking.py)
    tool/result …        (prune: replaces a large folded result, surfaceOp replace S..S)
    compaction/summary {id, summary, folded, kept, tokensBefore, tokensAfter, model, mechanical, archive?,
                        requests?, usage?, cost?, countedTokens?, released?}
    user/message         (the digest, surfaceOp fold S..E keeping `kept`)
    compaction/end {id, error?, masked?, pruned?, skipped?}
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from foldlog.compaction import digest, facts, masking, planning, summary
from foldlog.compaction.settings import CompactionSettings
from foldlog.cost.prices import price_request, sum_costs
from foldlog.errors import CompactionError
from foldlog.events import CompactionDone, CompactionStarted, Notice
from foldlog.events import Usage as UsageEvent
from foldlog.log.frozen import thaw
from foldlog.log.grammar import kinds
from foldlog.log.grammar.writer import EventWriter
from foldlog.log.text import message_text
from foldlog.providers.base import declared

if TYPE_CHECKING:
    from foldlog._core import CompactionPlan, PlanHistory
    from foldlog.log.grammar.types import Usage
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider, Request

ELISION = (
    planning.ELIDED_PREFIX + "{name}, {n} bytes dropped to save context; "
    "re-run the tool if the data is needed again]"
)


@dataclass(frozen=True, slots=True)
class CompactionPreview:
    """What a compaction of the current surface would do: the plan a run folds by.

    ``Compactor.plan`` makes it and a run folds exactly what it says (the run's
    :attr:`CompactionResult.preview` is the plan it used). Counts are the session's tokenizer's
    (``tokenizer``: ``deepseek-v4``, ``cl100k``, ``o200k`` or ``estimate``); ``tokens_after`` is
    without the digest, whose size is known only once it is written.
    """

    messages: int  # on the surface
    pinned: int  # the verbatim prefix
    kept: int  # region messages kept verbatim
    folded: int  # region messages summarised (0 when the plan folds nothing)
    tail: int  # the verbatim recent tail
    tokens_before: int
    tokens_after: int
    skipped: str | None  # why nothing is folded (None: a fold)
    tokenizer: str
    #: kept messages folded by the kept-overflow rule: they held the surface above the trigger
    released: int
    history: PlanHistory = field(repr=False, compare=False)
    plan: CompactionPlan = field(repr=False, compare=False)
    seqs: tuple[int, ...] = field(repr=False, compare=False)

    @property
    def should_fold(self) -> bool:
        return self.skipped is None

    def describe(self) -> str:
        """What the plan folds, for people: ``44 message(s) (keeping 0 of them in place, the first
        1 pinned and the last 70 as the tail); 29,381 → 16,142 tokens before the digest
        (deepseek-v4)``, or why nothing is folded."""
        if not self.should_fold:
            return f"nothing to fold ({self.skipped}; {self.tokens_before:,} tokens, {self.tokenizer})"
        approx = "≈" if self.tokenizer == "estimate" else ""
        released = (
            f", {self.released} of them kept messages folded because they held the surface above the trigger"
            if self.released
            else ""
        )
        return (
            f"{self.folded} message(s) (keeping {self.kept} of them in place, the first {self.pinned} "
            f"pinned and the last {self.tail} as the tail{released}); {approx}{self.tokens_before:,} → "
            f"{approx}{self.tokens_after:,} tokens before the digest ({self.tokenizer})"
        )


@dataclass(slots=True)
class CompactionResult:
    """What one compaction did."""

    id: str
    trigger: str
    folded: int = 0  # chat messages folded into the digest (0: nothing folded)
    kept: int = 0
    pruned: int = 0  # tool results elided
    masked: int = 0  # tool results masked (the mask and hybrid strategies)
    strategy: str = "summary"
    summary: str = ""
    mechanical: bool = False
    archive: str | None = None
    tokens_before: int = 0
    tokens_after: int = 0  # with the digest
    digest_tokens: int = 0
    skipped: str | None = None
    folded_seqs: list[int] = field(default_factory=list)
    #: surface seqs of kept messages folded by the kept-overflow rule (docs/compaction.md)
    released_seqs: list[int] = field(default_factory=list)
    preview: CompactionPreview | None = None  # the plan the fold followed


def unfinished_compaction(session: Session) -> dict[str, Any] | None:
    """The ``compaction/start`` data of a compaction that started and never ended (a crash
    between start and end), with its ``seq``; ``None`` when every compaction finished."""
    seq = session.unfinished_compaction
    if seq is None:
        return None
    data = dict(session.events[seq]["data"])
    data["seq"] = seq
    return data


@dataclass(frozen=True, slots=True)
class _End:
    """What a compaction's ``compaction/end`` says beyond its id: the results masked or pruned,
    and why nothing was folded after them."""

    masked: int = 0
    pruned: int = 0
    skipped: str | None = None


class Compactor:
    """Keeps one session inside its context window.

    ``settings``: its constants and the resolved window (`foldlog.Options.compaction`; default:
    the spec's, no window). ``emit`` receives :mod:`foldlog.events` dataclasses (``Notice``,
    ``CompactionStarted``, ``CompactionDone``, ``Usage`` with source ``compaction``). Tokens are
    counted with the session's tokenizer for :attr:`model` (exact counts kept in the log, or the
    session's calibrated estimate), through the core: the trigger, the plan and a preview of it
    count alike.
    """

    def __init__(
        self,
        session: Session,
        provider: Provider,
        settings: CompactionSettings | None = None,
        emit: Callable[[Any], Any] | None = None,
    ) -> None:
        self.session = session
        self.provider = provider
        self.settings = settings if settings is not None else CompactionSettings()
        self._events = EventWriter.on(session)
        self._emit = emit or (lambda event: None)
        self._soft_noticed = False
        self._mask_spent = False  # the mask strategy's "nothing left to mask" warning was given
        #: auto-compactions that folded on consecutive steps (calls of `maybe_compact`)
        self.consecutive = 0
        self.stuck = False

    @property
    def window(self) -> int:
        return self.settings.window

    @property
    def model(self) -> str | None:
        """The model whose tokenizer counts: the session's (the agent sets it), else the
        provider's; ``None`` leaves the choice to the session (its default model)."""
        return self.session.model or self.provider.model or None

    # --- the trigger -----------------------------------------------------------------------

    async def maybe_compact(self, prompt_tokens: int | None, tools: Sequence[Mapping[str, Any]] = ()) -> None:
        """Compact when the latest request's prompt passed ``compact_ratio`` of the window.

        Called once per step (after every tool batch and before an answer is returned).
        ``prompt_tokens`` is the provider's count for the latest single request; ``None`` (no
        usage reported) falls back to the session's local count of the derived messages and the
        tools. Failures become a warning ``Notice``; nothing is raised but cancellation.

        The stuck guard counts auto-compactions that folded on consecutive steps: a step without
        one resets the count; at ``stuck_limit`` auto-compaction pauses (a warning) until a
        request fits under the trigger again.
        """
        window = self.window
        if window <= 0:
            return
        opts = self.settings
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
        folded = False
        try:
            result = await self._run("auto", None, force, measured)
            folded = result is not None and (result.folded > 0 or result.masked > 0)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a failed compaction must never end the run
            self._notice(f"compaction failed: {e}", "warn")
        finally:
            self.consecutive = self.consecutive + 1 if folded else 0
        if self.consecutive >= opts.stuck_limit:
            self.stuck = True
            self._notice(
                f"auto-compaction paused: it folded on {self.consecutive} consecutive steps and the "
                f"prompt was past {opts.compact_ratio:.0%} of the window again each time: the "
                f"{window:,}-token context window is too small for the recent tail plus the pinned "
                "prefix (use a larger window, a smaller tail_tokens, or compact manually)",
                "warn",
            )

    async def compact(
        self, trigger: str = "manual", focus: str | None = None, force: bool = False
    ) -> CompactionResult | None:
        """Run one compaction now (the stuck latch does not apply). Returns ``None`` when there
        is nothing to fold."""
        return await self._run(trigger, focus, force, None)

    # --- planning ------------------------------------------------------------------------------

    def plan(self, *, force: bool = False) -> CompactionPreview:
        """Plan a compaction of the current surface: the call a compaction makes before it folds
        (and again after pruning), so a preview is what the run will do.

        ``compact(force=True)`` (manual compaction, ``foldlog compact``) folds
        ``plan(force=True)``."""
        history = self.session.plan_history(self.model)
        seqs = tuple(self.session.surface_seqs())
        if len(seqs) != len(history):
            raise CompactionError(f"the session planned {len(history)} messages but {len(seqs)} surface seqs")
        plan = history.plan(**self.settings.plan_kwargs(force=force))
        n = len(history)
        return CompactionPreview(
            messages=n,
            pinned=plan.head,
            kept=len(plan.kept),
            folded=plan.fold_count if plan.should_fold else 0,
            tail=n - plan.tail_start,
            tokens_before=plan.tokens_before,
            tokens_after=plan.tokens_after,
            skipped=plan.skipped,
            tokenizer=self.session.tokenizer(self.model).name,
            released=len(plan.released),
            history=history,
            plan=plan,
            seqs=seqs,
        )

    def _local_prompt_tokens(self, tools: Sequence[Mapping[str, Any]]) -> int:
        # the session's running total (exact tokenizers: O(new messages) per step), with the tools
        return self.session.token_count(self.model, tools)

    # --- one compaction ----------------------------------------------------------------------

    async def _run(
        self, trigger: str, focus: str | None, force: bool, measured: int | None
    ) -> CompactionResult | None:
        opts = self.settings
        planned = self.plan(force=force)
        masks = (
            masking.plan_masks(self.session, planned, self.model, opts.keep_policy == "errors")
            if opts.strategy in ("mask", "hybrid")
            else masking.Masks((), 0)
        )
        # masking stubs the results prune would elide (hybrid): prune only what was not masked
        prune = (
            planned.history.prune_candidates(planned.plan, opts.prune_min_bytes)
            if trigger == "auto" and opts.strategy != "mask" and not masks
            else []
        )
        if opts.strategy == "mask" and not masks:
            if trigger != "auto":
                self._notice("nothing to compact (no tool result before the tail to mask)")
            elif not self._mask_spent:
                self._mask_spent = True
                self._notice(
                    "the mask strategy has no tool result left to mask and the context is still past "
                    f"{opts.compact_ratio:.0%} of the window (the hybrid strategy folds then)",
                    "warn",
                )
            return None
        self._mask_spent = False
        if not planned.should_fold and not prune and not masks:
            if trigger != "auto":
                self._notice(f"nothing to compact ({planned.skipped})")
            return None

        number = self.session.events.types().count(kinds.COMPACTION_START) + 1
        cid = f"compaction-{number}"
        result = CompactionResult(cid, trigger, tokens_before=planned.tokens_before, strategy=opts.strategy)
        self._emit(CompactionStarted(trigger, focus))
        self._events.compaction_start(cid, trigger, strategy=opts.strategy, focus=focus)
        try:
            end = await self._body(result, planned, masks, prune, measured, force, number, focus)
        except BaseException as e:
            # the fold lands in one append or not at all; close the compaction with the error
            why = "cancelled" if isinstance(e, asyncio.CancelledError) else f"{type(e).__name__}: {e}"
            try:
                self._events.compaction_end(cid, error=why)
            finally:
                self._emit(CompactionDone(trigger, 0, "", None, False))
            raise
        return self._finish(result, end)

    async def _body(
        self,
        result: CompactionResult,
        planned: CompactionPreview,
        masks: masking.Masks,
        prune: Sequence[int],
        measured: int | None,
        force: bool,
        number: int,
        focus: str | None,
    ) -> _End:
        """Mask, prune, then fold; returns what the ``compaction/end`` event says."""
        if masks:
            # every stub in one append, all or nothing
            self.session.append_events(masks.events)
            result.masked = len(masks)
            before = planned.tokens_before
            planned = self.plan(force=force)  # the masked surface, counted as the planner counts
            result.tokens_after = planned.tokens_before
            saved = before - planned.tokens_before
            trigger_at = self.window * self.settings.compact_ratio
            under = (measured if measured is not None else before) - saved < trigger_at
            # hybrid folds only when masking did not get under the trigger (or the fold is forced)
            if self.settings.strategy == "mask" or (under and not force):
                return _End(masked=len(masks))
            if not planned.should_fold:
                result.skipped = planned.skipped
                return _End(masked=len(masks), skipped=planned.skipped)
        if prune:
            saved = self._prune(planned, prune)
            result.pruned = len(prune)
            self._notice(f"elided {len(prune)} large tool result(s) in the fold region (~{saved:,} tokens)")
            trigger_at = self.window * self.settings.compact_ratio
            if measured is not None and not force and measured - saved < trigger_at:
                result.skipped = "pruned"
                return _End(pruned=len(prune))
            planned = self.plan(force=force)
            if not planned.should_fold:
                result.skipped = planned.skipped
                return _End(pruned=len(prune), skipped=planned.skipped)
        await self._fold(result, planned, number, focus)
        return _End(masked=len(masks))

    def _finish(self, result: CompactionResult, end: _End) -> CompactionResult:
        self._events.compaction_end(result.id, masked=end.masked, pruned=end.pruned, skipped=end.skipped)
        self.session.flush()
        self._emit(
            CompactionDone(result.trigger, result.folded, result.summary, result.archive, result.mechanical)
        )
        return result

    def _prune(self, planned: CompactionPreview, indices: Sequence[int]) -> int:
        """Replace each large folded tool result with the elision line; returns the tokens saved."""
        saved = 0
        tokens = planned.history.tokens()
        messages = self.session.derive_messages()
        tokenizer = self.session.tokenizer(self.model)
        for i in indices:
            seq = planned.seqs[i]
            original = self.session.events[seq]
            data = thaw(original["data"])
            msg = data.get("message") if isinstance(data.get("message"), dict) else None
            if original["type"] != kinds.TOOL_RESULT or msg is None:
                continue  # only recorded tool results are replaced (never a foreign shape)
            text = message_text(messages[i])
            name = str(msg.get("toolName") or messages[i].get("name") or "tool")
            n = len(text.encode())
            msg["content"] = ELISION.format(name=name, n=n)
            data["meta"] = {**(data.get("meta") or {}), "elidedBytes": n}
            self._events.replaced_result(seq, data)
            elided = {
                "role": "tool",
                "tool_call_id": messages[i].get("tool_call_id"),
                "content": msg["content"],
            }
            saved += max(tokens[i] - tokenizer.count_message(elided), 0)
        return saved

    async def _fold(
        self, result: CompactionResult, planned: CompactionPreview, number: int, focus: str | None
    ) -> None:
        opts = self.settings
        plan, seqs = planned.plan, planned.seqs
        messages = self.session.derive_messages()
        first, last = seqs[plan.head], seqs[plan.tail_start - 1]
        nodes = self.session.surface_nodes()
        pos = {s: k for k, s in enumerate(nodes)}
        keep = [seqs[i] for i in plan.kept]
        keep_set = set(keep)
        span = nodes[pos[first] : pos[last] + 1]  # the digest takes its place, but for `keep`
        removed = [s for s in span if s not in keep_set]
        folded = [messages[i] for i in plan.fold]
        released = [seqs[i] for i in plan.released]
        if opts.archive_dir:
            result.archive = write_archive(Path(opts.archive_dir), self.session.id, number, folded)

        provider: Provider = opts.summary_provider or self.provider
        if opts.strategy == "mechanical":
            provider = summary.NoSummary(provider.context_window or self.window or None)
        # the summariser's own window (another model's, when summary_provider is set)
        window = int(provider.context_window or self.window or 128_000)
        if released:
            self._notice(
                f"{len(released)} kept message(s) (the user's earlier turns and digests) folded into the "
                f"summary too: kept verbatim they would hold the surface above {opts.fold_target:,} "
                f"tokens (of the {self.window:,}-token window) after the fold",
                "warn",
            )
        # the structured digest's facts: the mechanical fold's text, and facts a summary must keep
        surface = facts.mark(messages, planned)
        kept_facts, max_digest = digest.digest_facts(surface), digest.budget(surface)
        request = summary.summary_request(
            folded,
            focus=focus,
            released=bool(released),
            max_chars=_transcript_chars(window),
            model=None,  # the summary provider's own model
            facts="" if isinstance(provider, summary.NoSummary) else digest.sections(kept_facts, max_digest),
        )

        usages: list[Usage] = []

        def on_usage(u: Usage) -> None:
            usages.append(u)
            self._emit(UsageEvent.of(u, "compaction"))

        outcome = await summary.summarize(provider, request, timeout=opts.summary_timeout, on_usage=on_usage)
        result.mechanical = not outcome.text
        if result.mechanical:
            where = result.archive or f"the session log, events #{removed[0]}–#{removed[-1]}"
            text = digest.mechanical_digest(surface, len(folded), where)
            self._notice(f"the summary was unavailable ({outcome.error}); folded mechanically", "warn")
        else:
            text = digest.complete(outcome.text, kept_facts, max_digest)
        content = summary.digest_content(text)
        # counted as the planner will count the derived digest
        # a plain int (a TokenCount would print as "TokenCount(189, exact=False)" in tables)
        result.digest_tokens = int(
            self.session.tokenizer(self.model).count_message({"role": "user", "content": content})
        )
        result.summary = text
        result.folded = len(folded)
        result.kept = len(keep)
        result.folded_seqs = removed
        result.released_seqs = released
        result.tokens_after = plan.tokens_after + result.digest_tokens
        result.preview = planned
        extra: dict[str, Any] = {}
        if result.archive:
            extra["archive"] = result.archive
        if released:
            extra["released"] = released
        if not isinstance(provider, summary.NoSummary):
            extra.update(summary_spend(self.session, provider, request, outcome, usages, self.model))
        self._events.compaction_summary(
            result.id,
            text,
            removed,
            keep,
            tokens_before=plan.tokens_before,
            tokens_after=result.tokens_after,
            model=provider.model or "",
            mechanical=result.mechanical,
            extra=extra,
        )
        self._events.digest(content, span, keep)
        self._soft_noticed = False

    def _notice(self, message: str, level: Literal["info", "warn"] = "info") -> None:
        self._emit(Notice(message, level))


def summary_spend(
    session: Session,
    provider: Provider,
    request: Request,
    outcome: summary.SummaryOutcome,
    usages: Sequence[Usage],
    model: str | None,
) -> dict[str, Any]:
    """What the summary calls spent, for the ``compaction/summary`` event (`foldlog.cost.Ledger`
    adds it to the turn and the session, and budgets count it): ``requests`` (the calls made),
    ``usage`` (reported, summed over the calls) and ``cost`` (each call priced whole, with the
    summariser's prices, summed) — or, when the summariser reported no usage, ``countedTokens``:
    each call's prompt and the summary counted with the session's tokenizer."""
    out: dict[str, Any] = {"requests": outcome.attempts}
    if not usages:
        tok = session.tokenizer(provider.model or model)
        reply = int(tok.count_message({"role": "assistant", "content": outcome.text}))
        out["countedTokens"] = outcome.attempts * int(tok.count_request(request.messages)) + reply
        return out
    total = dataclasses.replace(usages[0])
    for u in usages[1:]:
        for f in dataclasses.fields(total):
            setattr(total, f.name, getattr(total, f.name) + getattr(u, f.name))
    out["usage"] = total.to_dict()
    abilities = declared(provider)
    costs = [
        price_request(u, provider.model or None, provider=abilities.price_provider, prices=abilities.prices)
        for u in usages
    ]
    if all(c is not None for c in costs):
        out["cost"] = sum_costs([c for c in costs if c is not None]).to_log()
    return out


def _transcript_chars(window: int) -> int:
    """Characters of transcript the summariser gets: its window less room for the reply and the
    instructions, at a conservative 3 characters per token."""
    reserve = min(16_384, window // 4) + 1_024
    return max(window - reserve, window // 4) * 3


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
