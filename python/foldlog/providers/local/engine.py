"""llama.cpp in process: one loaded GGUF, its special tokens, prompt-prefix reuse, constrained decoding.

The local provider (:mod:`foldlog.providers.local.provider`) renders a prompt as token ids and asks this
engine for one model turn. The engine owns what needs the model's vocabulary:

- **Special tokens never reach an answer.** Every control, unknown or unused token of the
  vocabulary (and the multimodal markers) has its logit removed before sampling; the end of the
  model's turn (``<end_of_turn>``, EOS, or the start of another turn) ends generation and is not
  part of the text. The same tokens *spelled out* in plain text (``<`` ``end_of_turn`` ``>``) end
  the turn too, and are cut (:class:`SpecialTexts`).
- **Grammar-constrained decoding** with llama.cpp's GBNF sampler, applied lazily: a token is
  checked against the grammar only after it won, and only when it is refused are the next 64 (then
  all 262k) candidates checked. Applying the grammar to the whole vocabulary on every token (what
  llama-cpp-python's own sampler chain does) costs tens of milliseconds per token on two cores.
- **Prefix reuse**: an agent's next request repeats the last one's prompt and adds to it; only
  the new tokens are evaluated (the rest is the KV cache of the previous turn).

llama.cpp's calls release the GIL; a generation runs on a worker thread and holds the engine's
lock (one context, one generation at a time).
"""

from __future__ import annotations

import codecs
import ctypes
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldlog.errors import LocalModelError

# Token markers that are not flagged as control tokens in Gemma's GGUF but are no text either
# (its multimodal placeholders): banned like the control tokens.
EXTRA_SPECIAL = frozenset({"[multimodal]", "<start_of_image>", "<end_of_image>", "<image_soft_token>"})
GRAMMAR_PROBES = (1, 64)  # candidates checked against the grammar before the whole vocabulary
_MARKUP = re.compile(r"<[^<>\s]{1,40}>|\[multimodal\]")


@dataclass(slots=True)
class Generation:
    """One model turn: its text, why it ended and its token counts."""

    text: str
    finish: str  # "stop" (end of turn), "length" (max_tokens), "grammar" (the grammar completed)
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    tokens: tuple[int, ...] = ()  # the ids decoded (the end-of-turn token is not one of them)


class SpecialTexts:
    """Cuts text at the first spelled-out special token; holds back a suffix that may become one."""

    def __init__(self, texts: set[str]) -> None:
        self.texts = frozenset(texts)
        self.prefixes = frozenset(t[:i] for t in texts for i in range(1, len(t)))

    def find(self, text: str) -> int:
        """Index of the first special token text in ``text``, or -1."""
        for m in _MARKUP.finditer(text):
            if m.group() in self.texts:
                return m.start()
        return -1

    def safe_len(self, text: str) -> int:
        """How much of ``text`` can be emitted: all but a suffix that could grow into a special text."""
        start = max(len(text) - 40, 0)
        for i in range(start, len(text)):
            if text[i] in "<[" and text[i:] in self.prefixes:
                return i
        return len(text)


def _held(text: str, stop_texts: Sequence[str]) -> int:
    """How much of ``text`` can be passed on: all but a suffix that may begin a stop text."""
    for i in range(max(len(text) - max((len(t) for t in stop_texts), default=0), 0), len(text)):
        if any(t.startswith(text[i:]) for t in stop_texts):
            return i
    return len(text)


class LlamaEngine:
    """A GGUF model loaded with llama-cpp-python, decoding one turn at a time."""

    def __init__(self, model_path: str | Path, *, n_ctx: int, n_threads: int | None = None) -> None:
        import llama_cpp
        import numpy as np

        from foldlog.providers.local.llama_logs import route_llama_logs

        route_llama_logs(llama_cpp)  # before the load: its lines go to logging, not stderr
        self._lib = llama_cpp
        self._np = np
        self.lock = threading.Lock()
        self.llm: Any = llama_cpp.Llama(
            str(model_path), n_ctx=n_ctx, n_threads=n_threads, n_batch=512, verbose=False
        )
        self.n_ctx = n_ctx
        self.vocab = self.llm._model.vocab
        self.n_vocab = int(self.llm.n_vocab())
        self.metadata: dict[str, str] = dict(self.llm.metadata)
        flags = llama_cpp.LLAMA_TOKEN_ATTR_CONTROL | llama_cpp.LLAMA_TOKEN_ATTR_UNKNOWN
        flags |= llama_cpp.LLAMA_TOKEN_ATTR_UNUSED
        special: list[int] = []
        texts: set[str] = set()
        for i in range(self.n_vocab):
            text = self.piece(i)
            if llama_cpp.llama_vocab_get_attr(self.vocab, i) & flags or text in EXTRA_SPECIAL:
                special.append(i)
                if text:
                    texts.add(text)
        self.special_ids: tuple[int, ...] = tuple(special)
        self.special_texts = SpecialTexts(texts)
        self.stop_ids = frozenset(i for i in special if llama_cpp.llama_vocab_is_eog(self.vocab, i))
        self._banned = np.array([i for i in special if i not in self.stop_ids], dtype=np.int64)
        self._stop_array = np.array(sorted(self.stop_ids), dtype=np.int64)
        self._cands = (llama_cpp.llama_token_data * self.n_vocab)()
        self._cand_view = np.ctypeslib.as_array(self._cands)

    # --- vocabulary ------------------------------------------------------------------------

    def piece(self, token: int) -> str:
        """A token's text with special tokens shown (``<end_of_turn>``)."""
        data: bytes = self.llm.detokenize([token], special=True)
        return data.decode("utf-8", errors="replace")

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """``special=False`` for content: a user's ``<end_of_turn>`` stays text, never a marker."""
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def special_token(self, text: str) -> int:
        ids = self.tokenize(text, special=True)
        if len(ids) != 1 or ids[0] not in self.special_ids:
            raise LocalModelError(f"{text!r} is not a special token of this model")
        return ids[0]

    @property
    def bos(self) -> int:
        return int(self.llm.token_bos())

    # --- decoding --------------------------------------------------------------------------

    def generate(
        self,
        prompt: Sequence[int],
        *,
        max_tokens: int,
        grammar: str | None = None,
        stop_ids: frozenset[int] = frozenset(),
        temperature: float = 0.0,
        top_p: float = 0.95,
        seed: int = 0,
        cancel: threading.Event | None = None,
        on_text: Callable[[str], None] | None = None,
        end_when: Callable[[str, float], bool] | None = None,
        stop_texts: Sequence[str] = (),
        banned: Sequence[int] = (),
    ) -> Generation:
        """Decode one turn after ``prompt``. ``on_text`` gets the text as it is decided (never a
        special token, never a piece of one). With ``grammar`` the whole output follows it.
        ``end_when(text, logit)``: asked before each token is taken (the text so far, the chosen
        token's logit); true ends the turn there (see the provider's end-of-turn rule).
        ``stop_texts``: the turn ends where one of them appears (it is not part of the text).
        ``banned``: tokens this turn may not produce (besides the special ones)."""
        with self.lock:
            return self._generate(
                list(prompt),
                max_tokens,
                grammar,
                stop_ids,
                temperature,
                top_p,
                seed,
                cancel,
                on_text,
                end_when,
                tuple(stop_texts),
                banned,
            )

    def _generate(
        self,
        prompt: list[int],
        max_tokens: int,
        grammar: str | None,
        stop_ids: frozenset[int],
        temperature: float,
        top_p: float,
        seed: int,
        cancel: threading.Event | None,
        on_text: Callable[[str], None] | None,
        end_when: Callable[[str, float], bool] | None,
        stop_texts: tuple[str, ...],
        banned: Sequence[int] = (),
    ) -> Generation:
        lib, np = self._lib, self._np
        if len(prompt) >= self.n_ctx:
            raise LocalModelError(f"the prompt has {len(prompt)} tokens; the context holds {self.n_ctx}")
        max_tokens = min(max_tokens, self.n_ctx - len(prompt))
        cached = self._prefill(prompt)
        sampler = None
        if grammar is not None:
            sampler = lib.llama_sampler_init_grammar(self.vocab, grammar.encode("utf-8"), b"root")
            if not sampler:
                raise LocalModelError("llama.cpp could not parse the tool-call grammar")
        rng = np.random.default_rng(seed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""  # decided text not yet passed on (may be the start of a spelled special token)
        text: list[str] = []
        finish = "length"
        produced = 0
        decoded: list[int] = []
        stops = self.stop_ids | stop_ids
        extra_stops = np.array(sorted(stop_ids - self.stop_ids), dtype=np.int64)
        also_banned = np.array(sorted(set(banned) - stops), dtype=np.int64)
        try:
            while produced < max_tokens:
                if cancel is not None and cancel.is_set():
                    finish = "cancelled"
                    break
                raw = np.ctypeslib.as_array(
                    lib.llama_get_logits_ith(self.llm._ctx.ctx, -1), shape=(self.n_vocab,)
                )
                logits = raw.copy()
                logits[self._banned] = -np.inf
                logits[also_banned] = -np.inf
                logits[extra_stops] = raw[extra_stops]  # special, but allowed: they end the turn
                token = self._pick(logits, sampler, temperature, top_p, rng)
                if token is None:  # the grammar is complete: nothing more may follow
                    finish = "grammar"
                    break
                if end_when is not None and end_when("".join(text) + pending, float(logits[token])):
                    finish = "stop"
                    break
                if token in stops:
                    finish = "stop"
                    break
                produced += 1
                decoded.append(token)
                if sampler is not None:
                    lib.llama_sampler_accept(sampler, token)
                pending += decoder.decode(self.llm.detokenize([token]))
                cut = self.special_texts.find(pending)
                # a stop text ends the turn once there is text before it (not a leading blank line)
                ends = [
                    i
                    for i in (pending.find(t) for t in stop_texts)
                    if i >= 0 and (pending[:i].strip() or any(p.strip() for p in text))
                ]
                if cut >= 0 or ends:  # a spelled-out turn marker, or a stop text: the turn is over
                    pending = pending[: min([*ends, *([cut] if cut >= 0 else [])])]
                    finish = "stop"
                    break
                keep = min(self.special_texts.safe_len(pending), _held(pending, stop_texts))
                if keep:
                    text.append(pending[:keep])
                    if on_text is not None:
                        on_text(pending[:keep])
                    pending = pending[keep:]
                self.llm.eval([token])
        finally:
            if sampler is not None:
                lib.llama_sampler_free(sampler)
        pending += decoder.decode(b"", final=True)
        if pending:
            text.append(pending)
            if on_text is not None:
                on_text(pending)
        return Generation("".join(text), finish, len(prompt), cached, produced, tuple(decoded))

    def _prefill(self, prompt: list[int]) -> int:
        """Evaluate ``prompt``, reusing the KV cache of the longest prefix already evaluated."""
        llm = self.llm
        have = llm.input_ids[: llm.n_tokens]
        same = 0
        limit = min(len(have), len(prompt) - 1)  # the last token is always evaluated: its logits
        while same < limit and have[same] == prompt[same]:
            same += 1
        if same == 0 or not llm._ctx.kv_cache_seq_rm(-1, same, -1):
            llm.reset()
            same = 0
        llm.n_tokens = same
        llm.eval(prompt[same:])
        return same

    def _pick(self, logits: Any, sampler: Any, temperature: float, top_p: float, rng: Any) -> int | None:
        """The next token: greedy (``temperature`` 0) or sampled, allowed by the grammar if any."""
        np = self._np
        if sampler is None and temperature <= 0:
            return int(np.argmax(logits))
        probes = GRAMMAR_PROBES if temperature <= 0 else GRAMMAR_PROBES[1:]
        for k in (*probes, self.n_vocab):
            if k == 1:
                ids = np.array([int(np.argmax(logits))])
            elif k < self.n_vocab:
                ids = np.argpartition(-logits, k - 1)[:k]
            else:
                ids = np.arange(self.n_vocab)
            if sampler is not None and k < self.n_vocab:
                # a completed grammar allows only the end of the turn: always offer it
                ids = np.union1d(ids, self._stop_array)
            ids = ids[np.isfinite(logits[ids])]
            if sampler is None:
                allowed, values = ids, logits[ids]
            else:
                allowed, values = self._apply(sampler, ids, logits)
            if len(allowed):
                if temperature <= 0:
                    return int(allowed[int(np.argmax(values))])
                return self._sample(allowed, values, temperature, top_p, rng)
            if sampler is None:
                break
        return None

    def _apply(self, sampler: Any, ids: Any, logits: Any) -> tuple[Any, Any]:
        """The candidates ``ids`` the grammar allows, with their logits."""
        np, lib = self._np, self._lib
        n = len(ids)
        view = self._cand_view
        view["id"][:n] = ids
        view["logit"][:n] = logits[ids]
        view["p"][:n] = 0.0
        arr = lib.llama_token_data_array(data=self._cands, size=n, selected=-1, sorted=False)
        lib.llama_sampler_apply(sampler, ctypes.byref(arr))
        size = int(arr.size)
        got_ids = view["id"][:size].copy()
        got = view["logit"][:size].copy()
        ok = np.isfinite(got)
        return got_ids[ok], got[ok]

    def _sample(self, ids: Any, values: Any, temperature: float, top_p: float, rng: Any) -> int:
        np = self._np
        z = (values - values.max()) / temperature
        p = np.exp(z)
        p /= p.sum()
        order = np.argsort(-p)
        cum = np.cumsum(p[order])
        keep = order[: int(np.searchsorted(cum, top_p) + 1)]
        q = p[keep] / p[keep].sum()
        return int(ids[keep[int(rng.choice(len(keep), p=q))]])

    def close(self) -> None:
        """Free the model and its context (waits for a generation in progress)."""
        with self.lock:
            self.llm.close()

    def next_logprobs(self, prompt: Sequence[int]) -> Any:
        """Log-probabilities of the token after ``prompt`` (special tokens excluded), as an array."""
        np = self._np
        with self.lock:
            self._prefill(list(prompt))
            logits = np.ctypeslib.as_array(
                self._lib.llama_get_logits_ith(self.llm._ctx.ctx, -1), shape=(self.n_vocab,)
            ).copy()
        logits[np.array(self.special_ids, dtype=np.int64)] = -np.inf
        top = logits.max()
        return logits - (top + np.log(np.exp(logits - top).sum()))

    def tokens_starting(self, text: str) -> list[int]:
        """The tokens whose text is a non-empty prefix of ``text`` (how a reply can begin it)."""
        out = []
        for n in range(1, len(text) + 1):
            ids = self.tokenize(text[:n], special=False)
            if len(ids) == 1:
                out.append(ids[0])
        return sorted(set(out))
