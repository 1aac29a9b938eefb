"""Compaction strategies (docs/compaction.md, "Strategies"): ``mask`` puts a stub in the place of
every old tool result through the core's ``mask`` surface op (calls kept, replayed from the
log's bytes, counted with the session's tokenizer); ``hybrid`` masks and folds only when masking
does not get under the trigger; ``mechanical`` never calls a model; ``Options.strategy`` is
checked and recorded; compact-eval compares strategies, one row each."""

from __future__ import annotations

import asyncio
import csv
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from foldlog import Options, Session, _core
from foldlog.batch import GridPoint, run_batch
from foldlog.compaction import Compactor
from foldlog.compaction.masking import MASKED_PREFIX
from foldlog.compaction.settings import CompactionSettings, Strategy
from foldlog.compaction.summary import NoSummary
from foldlog.errors import ConfigError, FoldlogError
from foldlog.log.text import message_text
from tests.compaction.test_probes import SETTINGS, _session


def _compact(s: Session, strategy: Strategy, settings: CompactionSettings = SETTINGS) -> Any:
    chosen = dataclasses.replace(settings, strategy=strategy)
    return asyncio.run(Compactor(s, NoSummary(chosen.window), chosen).compact("manual", force=False))


def _calls(s: Session) -> list[Any]:
    return [m["tool_calls"] for m in s.derive_messages() if m.get("tool_calls")]


def test_mask_stubs_every_old_result_keeps_the_calls_and_replays_from_bytes() -> None:
    s = _session()
    calls, before = _calls(s), len(s.derive_messages())
    result = _compact(s, "mask")
    assert result is not None and result.masked == 3 and result.folded == 0
    messages = s.derive_messages()
    assert len(messages) == before and _calls(s) == calls  # every call (and its path) stays
    stubs = [message_text(m) for m in messages if m.get("role") == "tool"]
    assert [t.startswith(MASKED_PREFIX) for t in stubs] == [True, True, True, False]
    assert stubs[0].startswith('[masked: tool result of Read({"file_path": "/repo/src/alpha.py"}), ')
    assert stubs[0].endswith(" tokens, seq 3 in the log]")
    # the stub names where the result is: that event still holds it
    assert str(s.events[3]["data"]["message"]["content"]).startswith("def alpha(): ...")
    # replayed from the log's bytes: the same surface
    again = Session.from_bytes(s.to_bytes())
    assert list(again.derive_messages()) == list(messages)
    # counted exactly: what the run says it left is the session's own count of the surface now
    assert result.tokens_after == Compactor(again, NoSummary(), SETTINGS).plan(force=True).tokens_before
    assert result.tokens_after < result.tokens_before / 2
    start = next(e["data"] for e in s.events if e["type"] == "compaction/start")
    end = next(e["data"] for e in s.events if e["type"] == "compaction/end")
    assert start["strategy"] == "mask" and end["masked"] == 3
    # masked once: a second mask finds nothing left to mask
    assert _compact(s, "mask") is None


def test_the_core_refuses_a_mask_of_anything_but_a_result_on_the_surface() -> None:
    s = _session()
    data = {"message": {"role": "tool", "toolCallId": "c1", "content": _core.mask_stub("Read", "{}", 1, 1)}}
    for target in (1, 999):  # the user's message; no such event
        with pytest.raises(FoldlogError):
            s.append_event(
                "tool/result", data, surface_op={"op": "mask", "seq": target}, source_event_seqs=[1]
            )
    n = len(s.events)
    with pytest.raises(FoldlogError):  # the masked result must be a source
        s.append_event("tool/result", data, surface_op={"op": "mask", "seq": 3})
    assert len(s.events) == n


def test_hybrid_folds_only_when_masking_does_not_get_under_the_trigger() -> None:
    masked_only = _compact(_session(), "hybrid")
    assert masked_only.masked == 3 and masked_only.folded == 0
    small = dataclasses.replace(SETTINGS, window=1_200)  # the masked surface is still past 80%
    s = _session()
    both = _compact(s, "hybrid", small)
    assert both.masked > 0 and both.folded > 0 and both.mechanical
    assert both.tokens_after < masked_only.tokens_after


class _Refuses:
    """A summariser that must not be called."""

    model = "refuses"
    context_window = 4_000

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        raise AssertionError("the mechanical strategy called the model")
        yield  # pragma: no cover

    async def aclose(self) -> None:
        return None


def test_mechanical_never_calls_the_summariser_and_summary_does() -> None:
    s = _session()
    chosen = dataclasses.replace(SETTINGS, strategy="mechanical")
    done = asyncio.run(Compactor(s, _Refuses(), chosen).compact("manual", force=True))
    assert done is not None and done.mechanical and done.folded > 0 and done.strategy == "mechanical"
    summary = dataclasses.replace(SETTINGS, strategy="summary")
    # the summary strategy asks the model; its failure falls back to the digest with a notice
    notices: list[Any] = []
    out = asyncio.run(
        Compactor(_session(), _Refuses(), summary, notices.append).compact("manual", force=True)
    )
    assert out is not None and out.mechanical
    assert any("the summary was unavailable" in str(getattr(n, "message", "")) for n in notices)


def test_options_select_the_strategy_and_refuse_an_unknown_one() -> None:
    assert Options().strategy == "summary"
    assert Options(strategy="mask").compaction(8_000).strategy == "mask"
    with pytest.raises(ConfigError, match=r"Options\.strategy must be one of .*'mask'.*got 'fold'"):
        Options(strategy="fold")  # type: ignore[arg-type]


def test_compact_eval_compares_strategies_one_row_each(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    _session().save(log)
    out = tmp_path / "r.csv"
    point = GridPoint(4_000, 120, "none")
    run_batch(
        "compact-eval",
        [str(log)],
        out=out,
        engine="serial",
        points=[point],
        probes=True,
        strategies=["mask", "mechanical", "hybrid"],
    )
    with out.open(newline="") as f:
        rows = {r["strategy"]: r for r in csv.DictReader(f)}
    assert list(rows) == ["mask", "mechanical", "hybrid"]
    assert rows["mask"]["masked"] == "3" and rows["mask"]["folded"] == "0"
    assert int(rows["mask"]["saved"]) > int(rows["mask"]["tokens_before"]) // 2
    # every artifact the masked calls touched is still named by the calls
    assert rows["mask"]["survived_artifact"] == rows["mask"]["probes_artifact"] != "0"
    assert int(rows["mechanical"]["folded"]) > 0
    for bad, needs in ((["fold"], "unknown strategy 'fold'"), (["summary"], "needs a summary provider")):
        with pytest.raises(ConfigError, match=needs):
            run_batch("compact-eval", [str(log)], out=tmp_path / "x.csv", engine="serial", strategies=bad)


def test_a_live_agent_masks_by_its_options_and_the_next_request_carries_the_stubs() -> None:
    from tests.compaction.test_compactor import Run, answer, step

    r = Run([step(1, 1000), step(2, 2000), step(3, 3300), answer(1500)], strategy="mask", tail_tokens=500)
    assert r.agent.run_sync("fetch the pages") == "done"
    masks = [e for e in r.session.events if e.get("surfaceOp", None) not in (None, "append")]
    assert masks and all(e["surfaceOp"]["op"] == "mask" for e in masks)
    start = next(e["data"] for e in r.session.events if e["type"] == "compaction/start")
    assert start["strategy"] == "mask"
    # the request after the compaction carried the stubs (Run checks each request is the surface)
    last = r.wire_at_request[-1]
    assert any(str(m.get("content", "")).startswith(MASKED_PREFIX) for m in last)
    assert r.summarizer.requests == []  # masking calls no model
    again = Session.from_bytes(r.session.to_bytes())
    assert list(again.derive_messages()) == list(r.session.derive_messages())


def test_the_cli_compares_strategies_and_names_an_unknown_one(tmp_path: Path) -> None:
    from tests.cli.cli_testlib import run_cli

    log = tmp_path / "s.jsonl"
    _session().save(log)
    out = tmp_path / "r.csv"
    common = ("batch", "compact-eval", str(log), "-o", str(out), "--engine", "serial", "--windows", "4000")
    bad = run_cli(*common, "--tails", "120", "--strategies", "mask,fold", home=tmp_path)
    assert bad.returncode == 2 and "unknown strategy 'fold'" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr
    ok = run_cli(
        *common, "--tails", "120", "--keep", "none", "--strategies", "mask,mechanical", home=tmp_path
    )
    assert ok.returncode == 0, ok.stderr
    with out.open(newline="") as f:
        assert [r["strategy"] for r in csv.DictReader(f)] == ["mask", "mechanical"]


def test_mask_says_once_when_nothing_is_left_to_mask_past_the_trigger() -> None:
    notices: list[Any] = []
    settings = dataclasses.replace(SETTINGS, strategy="mask")
    compactor = Compactor(_session(), NoSummary(settings.window), settings, notices.append)
    for _ in range(3):
        asyncio.run(compactor.maybe_compact(3_900))  # past the 80% trigger of the 4,000 window
    warned = [n for n in notices if "no tool result left to mask" in str(getattr(n, "message", ""))]
    assert len(warned) == 1 and warned[0].level == "warn"
    assert sum(1 for e in compactor.session.events if e["type"] == "compaction/start") == 1
