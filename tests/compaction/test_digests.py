"""A digest is known from the log — a ``user/message`` whose surface op is a fold — never from its
text: compactions imported from Claude Code and Codex are kept by a later fold like foldlog's own,
and a user who types ``<compaction-summary>`` writes an ordinary message."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from foldlog import Options, Session
from foldlog.compaction import Compactor, planning
from foldlog.interchange import convert, write_conversation
from foldlog.providers import Scripted
from foldlog.providers.base import Done
from tests.compaction.corpus_histories import corpus_dir
from tests.compaction.plan_checks import digest_indices

MODEL = "deepseek-v4-flash"
SPOTTER = "claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
CODEX = "codex-localpush/rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"


class _NoSummary:
    model = "mechanical"
    context_window = None

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        yield Done("stop")


def _imported(fmt: str, source: str) -> Session:
    s = Session()
    write_conversation(convert(fmt, corpus_dir() / source)[0], s)
    s = Session.from_bytes(s._core.to_bytes())
    s.model = MODEL
    return s


@pytest.mark.skipif(not corpus_dir().is_dir(), reason="../shared/corpus is not available")
@pytest.mark.parametrize(
    ("fmt", "source", "window"),
    # windows small enough that the imported digest is no "small user turn" kept for its size
    [("claude-code", SPOTTER, 32_000), ("codex", CODEX, 3_000)],
    ids=["claude-code", "codex"],
)
def test_an_imported_compaction_is_kept_by_a_later_fold(fmt: str, source: str, window: int) -> None:
    s = _imported(fmt, source)
    (imported,) = [e["seq"] for e in s.events if e["type"] == "compaction/summary"]
    digest_seq = imported + 1  # the digest follows its compaction/summary
    assert s.events[digest_seq]["surfaceOp"]["op"] == "fold"
    text = s.events[digest_seq]["data"]["content"]
    assert not text.lstrip().startswith(planning.DIGEST_OPEN)  # the source's own words, no tag
    assert [s.surface_seqs()[i] for i in digest_indices(s)] == [digest_seq]

    c = Compactor(s, _NoSummary(), Options(context_window=window).compaction())  # type: ignore[arg-type]
    result = asyncio.run(c.compact("manual", force=True))
    assert result is not None and result.folded > 0
    assert digest_seq not in result.folded_seqs
    seqs = s.surface_seqs()
    assert s.derive_messages()[seqs.index(digest_seq)]["content"] == text  # verbatim
    assert len(digest_indices(s)) == 2  # the imported digest and foldlog's own


def test_user_text_with_the_digest_tag_is_an_ordinary_message() -> None:
    s = Session(system="s")
    s.add({"role": "user", "content": "go"})
    s.add({"role": "assistant", "content": "a" * 4000})
    pasted = f"{planning.DIGEST_OPEN}\n" + "notes I pasted " * 300 + f"\n{planning.DIGEST_CLOSE}"
    typed = s.add({"role": "user", "content": pasted})
    s.add({"role": "assistant", "content": "b" * 4000})
    s.add({"role": "assistant", "content": "c" * 7000})
    s.add({"role": "user", "content": "next"})
    assert digest_indices(s) == []
    summarizer = Scripted([{"content": "## Goal\n- go"}])
    c = Compactor(s, Scripted([]), Options(context_window=4_000, summary_provider=summarizer).compaction())
    result = asyncio.run(c.compact("manual", force=True))
    assert result is not None
    assert typed in result.folded_seqs  # folded like any other large message
    assert pasted not in [m["content"] for m in s.derive_messages()]
    assert "notes I pasted" in summarizer.requests[0].messages[1]["content"]  # summarised, not lost
    assert len(digest_indices(s)) == 1  # only the digest the fold wrote
