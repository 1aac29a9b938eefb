"""Previews tell the truth: ``foldlog compact --dry-run`` and ``Compactor.plan`` show what the run then
folds — the same messages folded, kept, pinned and left as the tail, the same tokens before and
after — on real sessions at several windows, with and without a summary call."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from foldlog import Options, Session
from foldlog.cli.main import main
from foldlog.compaction import Compactor
from foldlog.providers import Scripted
from foldlog.providers.base import Done
from tests.compaction.corpus_histories import corpus_dir
from tests.support.chat_server import ChatServer

SPOTTER = "claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"  # the README's example
SPOTTER_2 = "claude-code-spotter/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
CODEX = "codex-localpush/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"

# "53 message(s) (keeping 0 of them in place, the first 1 pinned and the last 61 as the tail);
#  36,341 → 19,732 tokens before the digest (deepseek-v4)"
PLAN_LINE = re.compile(
    r"(\d+) message\(s\) \(keeping (\d+) of them in place, the first (\d+) pinned and the last (\d+) "
    r"as the tail(?:, [^)]*)?\); ≈?([\d,]+) → ≈?([\d,]+) tokens before the digest \(([\w-]+)\)"
)


def _numbers(line: str) -> tuple[str, ...]:
    found = PLAN_LINE.search(line)
    assert found is not None, line
    return found.groups()


def _cli(home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    monkeypatch.setenv("FOLDLOG_HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.chdir(home)
    capsys.readouterr()
    assert main(list(args)) == 0
    return capsys.readouterr().out


def _imported(home: Path, monkeypatch: Any, capsys: Any, fmt: str, source: str) -> Path:
    _cli(home, monkeypatch, capsys, "log", "import", "--from", fmt, str(corpus_dir() / source))
    # the session's own log (its sub-agents are child logs beside it, their header naming it)
    (log,) = [p for p in (home / "sessions").glob("*.jsonl") if Session.load(p).parent is None]
    return log


pytestmark = pytest.mark.skipif(not corpus_dir().is_dir(), reason="../shared/corpus is not available")


@pytest.mark.parametrize(
    ("fmt", "source", "window"),
    [
        ("claude-code", SPOTTER, 32_000),
        ("claude-code", SPOTTER, 64_000),
        ("claude-code", SPOTTER_2, 32_000),
        ("codex", CODEX, 8_000),
        ("codex", CODEX, 16_000),
        ("codex", CODEX, 128_000),  # nothing to fold: the preview says so too
    ],
)
def test_dry_run_shows_what_the_mechanical_run_folds(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    fmt: str,
    source: str,
    window: int,
) -> None:
    log = _imported(tmp_path, monkeypatch, capsys, fmt, source)
    args = ("compact", str(log), "--mechanical", "--context-window", str(window))
    stored = log.read_bytes()
    dry = _cli(tmp_path, monkeypatch, capsys, *args, "--dry-run")
    assert log.read_bytes() == stored
    before = len(Session.load(log).derive_messages())
    run = _cli(tmp_path, monkeypatch, capsys, *args)
    if "nothing to fold" in dry:
        assert f"{before} messages on the surface; nothing to fold (too-few-messages;" in dry
        assert "nothing to fold" in run
        assert Session.load(log).events.types().count("compaction/start") == 1  # the imported one
        return
    assert f"{before} messages on the surface; would fold " in dry
    assert "folded " in run and "into a mechanical fold" in run
    assert _numbers(run) == _numbers(dry)
    folded, kept, pinned, tail, tokens_before, tokens_after, tokenizer = _numbers(dry)
    # no model asked: the session's own model counts (Claude: no exact tokenizer; Codex: o200k)
    assert tokenizer == ("estimate" if fmt == "claude-code" else "o200k")
    after = Session.load(log)
    summary = [e for e in after.events if e["type"] == "compaction/summary"][-1]["data"]
    if fmt == "claude-code":
        assert int(pinned) == 1  # the imported compaction is a digest, pinned at the start
    assert len(summary["kept"]) == int(kept)
    assert summary["tokensBefore"] == int(tokens_before.replace(",", ""))
    digest = re.search(r"into a mechanical fold of ([\d,]+) tokens", run)
    assert digest is not None
    assert summary["tokensAfter"] == int(tokens_after.replace(",", "")) + int(digest[1].replace(",", ""))
    # the surface: pinned + kept + the digest + the tail
    assert len(after.derive_messages()) == int(pinned) + int(kept) + 1 + int(tail) == before - int(folded) + 1


def test_dry_run_shows_what_the_summarised_run_folds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    log = _imported(tmp_path, monkeypatch, capsys, "claude-code", SPOTTER)
    server = ChatServer([{"content": "## Goal\n- find the spotter bug"}]).start()
    try:
        args: tuple[str, ...] = (
            "compact",
            str(log),
            "--provider",
            "openai-compatible",
            "--base-url",
            server.base_url,
        )
        args += ("--model", "fake-1", "--context-window", "32000")
        dry = _cli(tmp_path, monkeypatch, capsys, *args, "--dry-run")
        assert not server.requests  # a preview calls no model
        run = _cli(tmp_path, monkeypatch, capsys, *args)
    finally:
        server.close()
    assert "into a summary" in run and len(server.requests) == 1
    assert _numbers(run) == _numbers(dry)
    assert _numbers(dry)[-1] == "estimate"  # fake-1 has no exact tokenizer


class _NoSummary:
    model = "mechanical"
    context_window = None

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        yield Done("stop")


def _session(fmt: str, source: str) -> Session:
    from foldlog.interchange import convert, write_conversation

    s = Session()
    write_conversation(convert(fmt, corpus_dir() / source)[0], s)
    return Session.from_bytes(s._core.to_bytes())


@pytest.mark.parametrize("summarised", [False, True], ids=["mechanical", "summary"])
@pytest.mark.parametrize("model", ["deepseek-v4-flash", "gpt-4o", "some-local-model"])
@pytest.mark.parametrize(
    ("fmt", "source"), [("claude-code", SPOTTER), ("codex", CODEX)], ids=["claude", "codex"]
)
def test_compactor_plan_is_the_fold(fmt: str, source: str, model: str, summarised: bool) -> None:
    folds = 0
    for window in (6_000, 8_000, 16_000, 48_000):
        s = _session(fmt, source)
        s.model = model
        summarizer = Scripted([{"content": "## Goal\n- resume"}]) if summarised else _NoSummary()
        c = Compactor(s, summarizer, Options(context_window=window).compaction())  # type: ignore[arg-type]
        preview = c.plan(force=True)
        assert preview.messages == len(s.derive_messages())
        result = asyncio.run(c.compact("manual", force=True))
        if not preview.should_fold:
            assert result is None
            continue
        folds += 1
        assert result is not None and result.preview == preview
        assert result.mechanical is not summarised
        assert (result.folded, result.kept) == (preview.folded, preview.kept)
        assert result.tokens_before == preview.tokens_before
        assert result.tokens_after == preview.tokens_after + result.digest_tokens
        # the tokens the fold reported are what the planner counts on the new surface
        again = c.plan(force=True)
        assert again.tokens_before == result.tokens_after
        assert again.messages == preview.messages - preview.folded + 1
    assert folds >= 2
