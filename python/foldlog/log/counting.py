"""Token counts of a session's surface: the part of `Session` that counts and calibrates.

A mixin of `foldlog.log.session.Session` (kept apart so the session module stays one job): the
counts themselves are the core's (`_core.surface_token_total`, `_core.plan_history`), with the
per-event cache kept in the log; this module picks the tokenizer and calibrates the estimate on
the usage the provider reported for the session.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from foldlog import _core as _native
from foldlog.log.grammar.reader import Reply, latest_model, record_of

if TYPE_CHECKING:
    from foldlog._core import PlanHistory
    from foldlog.log.frozen import EventsView, MessageSequence
    from foldlog.log.tokens import TokenCount, Tokenizer


class TokenCounts:
    """Token counting for `Session` (which provides the attributes declared here)."""

    _lock: threading.RLock
    model: str | None
    _reported: tuple[int, int, int] | None
    _calibration: list[tuple[int, int]]
    _calibrated_for: tuple[int, int, int] | None

    if TYPE_CHECKING:

        @property
        def _core(self) -> _native.Log:
            raise NotImplementedError

        @property
        def rewrite_version(self) -> int:
            raise NotImplementedError

        def derive_messages(self) -> MessageSequence:
            raise NotImplementedError

        @property
        def events(self) -> EventsView:
            raise NotImplementedError

        @property
        def header(self) -> Mapping[str, Any] | None:
            raise NotImplementedError

    def counting_model(self, model: str | None = None) -> str | None:
        """The model whose tokenizer counts this session — the one rule every count follows
        (`token_count`, `plan_history`, compaction, ``log inspect``, batch ``stats``): ``model``
        when given; else the session's (the agent sets it); else the model its log names (the
        latest reply's ``data.model`` or request header's ``model``, else an imported
        transcript's ``meta.imported.model``); else foldlog's default model for a session
        foldlog recorded, and ``None`` for an imported one (a model nobody named: counted with
        the calibrated estimate, never called exact). Which tokenizer a model has, and whether
        it is exact, is the core's table (`foldlog.Tokenizer.for_model`)."""
        from foldlog.log.tokens import DEFAULT_MODEL

        if model or self.model:
            return model or self.model
        logged = self._logged_model()
        if logged:
            return logged
        imported = self._imported()
        if imported is not None:
            named = imported.get("model")
            return named if isinstance(named, str) and named else None
        return DEFAULT_MODEL

    def _imported(self) -> Mapping[str, Any] | None:
        """The header's ``meta.imported`` (what an importer read about the source), if any."""
        header = self.header
        meta = header.get("meta") if header is not None else None
        imported = meta.get("imported") if isinstance(meta, Mapping) else None
        return imported if isinstance(imported, Mapping) else None

    def _logged_model(self) -> str | None:
        """The latest model the log names (a reply's ``data.model``, a request header's)."""
        return latest_model(self.events, answered=True)

    def _reported_in_log(self) -> tuple[int, int, int] | None:
        """The latest prompt tokens a reply on the surface reports, with the derived messages
        before it (what its request carried): an imported session calibrates the estimate on
        the usage its source reported, as a live one does on each reply's."""
        with self._lock:
            seqs = self._core.derived_seqs()
            events = self.events
            for index in range(len(seqs) - 1, -1, -1):
                reply = record_of(events[seqs[index]])
                if isinstance(reply, Reply) and reply.usage is not None and reply.usage.prompt_tokens > 0:
                    return (reply.usage.prompt_tokens, self.rewrite_version, index)
        return None

    def _tokenizer(self, model: str | None) -> Tokenizer:
        from foldlog.log.tokens import Tokenizer, calibrated_tokens_per_char

        name = self.counting_model(model)
        tok = Tokenizer.for_model(name) if name else Tokenizer.estimate()
        if not tok.exact and self._reported is None and self._imported() is not None:
            # the source's own reports: they include what its log does not hold (the source
            # agent's system prompt and tool schemas), so the estimate learns that too
            self._reported = self._reported_in_log()
        reported = self._reported
        if not tok.exact and reported is not None:
            # characters per token learned from what the provider reported for this session
            if self._calibrated_for != reported:
                msgs = self.derive_messages()[: reported[2]]
                chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in msgs)
                self._calibration = [*self._calibration[-31:], (chars, reported[0])]
                self._calibrated_for = reported
            tok = Tokenizer.estimate(tokens_per_char=calibrated_tokens_per_char(self._calibration))
        return tok

    def token_count(self, model: str | None = None, tools: Sequence[Mapping[str, Any]] = ()) -> TokenCount:
        """Prompt tokens of the surface as the next request would carry it: its messages (with the
        model family's framing), the request priming and, when given, the tool schemas.

        A `TokenCount`: an ``int`` whose ``exact`` says whether the figure is exact — False for
        models without an exact tokenizer (the calibrated estimate) and when a message holds
        non-text content (images, audio, files: estimated, see docs/tokens.md).

        With an exact tokenizer each event is counted once: the count is kept with the event
        (``"tokens": {"deepseek-v4": n}`` in its line when it is flushed, with
        ``"tokensEstimated": true`` when part of it is an estimate), so a resumed session
        recounts nothing; a different tokenizer counts again.
        """
        from foldlog.log.tokens import TokenCount

        tok = self._tokenizer(model)
        with self._lock:
            total = _native.surface_token_total(self._core, tok._counter)
            tokens: int
            exact: bool
            if total is None:
                tokens, exact = sum(int(tok.count_message(m)) for m in self.derive_messages()), False
            else:
                tokens, exact = total[0], total[1] == 0
        extra = tok.count_tools(tools) if tools else 0
        return TokenCount(int(tokens) + extra + int(tok.request_overhead()), exact=exact and tok.exact)

    def token_counts(self, model: str | None = None) -> list[int] | None:
        """The tokens of each derived message (parallel to `derive_messages`) with ``model``'s
        exact tokenizer, from the same per-event cache as `token_count` (each event counted
        once); ``None`` when the model has no exact tokenizer."""
        tok = self._tokenizer(model)
        if not tok.exact:
            return None
        with self._lock:
            return _native.surface_token_counts(self._core, tok._counter)

    def plan_history(self, model: str | None = None) -> PlanHistory:
        """The compaction planner's view of the derived messages, built in the core (the only
        builder): each message counted with ``model``'s tokenizer — an exact one reads the counts
        kept in the log (recounting nothing), the estimate uses the ratio calibrated on this
        session's reported usage — and digests read from the log (a ``user/message`` whose
        surface op is a fold), never from text."""
        tok = self._tokenizer(model)
        with self._lock:
            return _native.plan_history(self._core, tok._counter)

    def tokenizer(self, model: str | None = None) -> Tokenizer:
        """The tokenizer this session counts ``model``'s tokens with (default: the session's
        model): exact where foldlog knows the model, else the estimate at the ratio calibrated on
        this session's reported usage — what `token_count` and `plan_history` count with."""
        return self._tokenizer(model)

    def record_prompt_tokens(self, prompt_tokens: int) -> None:
        """Remember the provider's reported ``prompt_tokens`` for a request of the current surface
        (the agent's replies do this through their usage): estimating tokenizers calibrate on it."""
        with self._lock:
            # cheap on purpose (the agent calls this every step): the calibration of estimating
            # tokenizers is derived from it only when an estimate is asked for
            self._reported = (prompt_tokens, self.rewrite_version, self._core.derived_len())
