"""Imported sessions keep their model and are counted with its tokenizer (issue 26, item 2).

A Claude Code session is counted with the calibrated estimate (Anthropic publishes no local
tokenizer) and never called exact; a Codex session on ``gpt-5.3-codex`` with o200k, exactly; a
transcript that names no model with the estimate. The same rule (`Session.counting_model`) gives
the same figures in ``log inspect``, compaction and batch ``stats``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from foldlog import Session
from foldlog.batch import Item, JobSpec, run_item
from foldlog.log.tokens import DEFAULT_MODEL
from tests.cli.cli_testlib import run_cli

CLAUDE = "claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CODEX = "codex-localpush/rollout-2026-02-23T12-47-42-019c8a53-a0dd-7130-bcd7-95445d84846a.jsonl"
TAU = "tau-bench/gpt-4o-airline.json"


def _import(tmp_path: Path, corpus: Path, fmt: str, rel: str) -> Path:
    out = tmp_path / f"{fmt}.jsonl"
    args = ["log", "import", "--from", fmt, str(corpus / rel), "-o", str(out)]
    if fmt == "openai":
        args += ["--index", "0"]
    proc = run_cli(*args, home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.parametrize(
    ("fmt", "rel", "model", "tokenizer", "exact"),
    [
        ("claude-code", CLAUDE, "claude-opus-4-6", "estimate", False),
        ("codex", CODEX, "gpt-5.3-codex", "o200k", True),
        ("openai", TAU, None, "estimate", False),  # names no model: never counted as DeepSeek
    ],
)
def test_an_imported_session_is_counted_with_its_own_models_tokenizer(
    tmp_path: Path, corpus: Path, fmt: str, rel: str, model: str | None, tokenizer: str, exact: bool
) -> None:
    log = _import(tmp_path, corpus, fmt, rel)
    session = Session.load(log)
    tokens = session.token_count()
    assert session.tokenizer().name == tokenizer and tokens.exact is exact
    counted = session.counting_model()
    assert counted == model or (model is not None and counted is not None and counted.startswith(model))

    # log inspect: the same rule, the same figure
    report = json.loads(run_cli("log", "inspect", str(log), "--json", home=tmp_path).stdout)
    assert (report["tokenizer"], report["tokens_exact"], report["tokens_model"]) == (
        tokenizer,
        exact,
        counted,
    )
    assert report["surface_tokens"] == int(tokens)

    # batch stats: the same
    (row,) = run_item(JobSpec("stats"), Item(str(log), "log", str(log)))
    assert row["error"] is None
    assert (row["tokenizer"], row["tokens_exact"], row["tokens"]) == (tokenizer, exact, int(tokens))

    # compaction: a mechanical fold (no model asked) plans with the same tokenizer
    dry = run_cli("compact", str(log), "--mechanical", "--context-window", "2000", "--dry-run", home=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert re.search(r"tokens before the digest \(([\w-]+)\)", dry.stdout)[1] == tokenizer  # type: ignore[index]

    # --model still decides when it is given
    assert session.tokenizer(DEFAULT_MODEL).name == "deepseek-v4"
    assert session.token_count(DEFAULT_MODEL).exact


def test_an_imported_claude_session_is_calibrated_on_its_logged_usage(tmp_path: Path, corpus: Path) -> None:
    from foldlog.log.tokens import Tokenizer

    session = Session.load(_import(tmp_path, corpus, "claude-code", CLAUDE))
    plain = Tokenizer.estimate()  # 0.25 tokens per character: what an uncalibrated count gives
    messages = session.derive_messages()
    uncalibrated = sum(int(plain.count_message(m)) for m in messages) + plain.request_overhead()
    tokens = session.token_count()
    assert not tokens.exact and session.tokenizer().name == "estimate"
    assert int(tokens) != uncalibrated  # the ratio comes from the replies' logged usage


def test_a_session_foldlog_recorded_without_a_model_keeps_the_default() -> None:
    session = Session(system="You are terse.")
    session.add({"role": "user", "content": "hi"})
    assert session.counting_model() == DEFAULT_MODEL
    assert session.tokenizer().name == "deepseek-v4" and session.token_count().exact
