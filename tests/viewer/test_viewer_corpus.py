"""The viewer and the context breakdown on every corpus transcript, imported as ``log import``
writes it (sub-agents and forks beside the main log), checked in headless Chromium: the page
builds, every event of every session has its row, every message on the surface carries the
session's own count, the sub-agents have their containers, the folds their marker, the size stays
in bounds; and the breakdown adds up to the session's token count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.interchange import convert
from foldlog.interchange.exports.view import render
from foldlog.interchange.import_logs import plan_logs, write_logs
from foldlog.log.context import breakdown, request_tools
from foldlog.log.frozen import thaw
from tests.cli.cli_testlib import corpus_transcripts
from tests.viewer.browser import Browser, dump_dom, parse
from tests.viewer.viewer_sessions import import_transcript, view

SPOTTER = "claude-code-spotter"
WITH_AGENTS = "fa812bfe-b295-4cca-9c2f-fdf01028cb46"  # two Task sub-agents and a compaction

#: what the page reports of its rows: session, seq, kind, tokens
ROWS = """JSON.stringify(Array.from(document.querySelectorAll('[data-seq]')).map(r => [
  r.closest('.session').dataset.session, Number(r.dataset.seq), r.dataset.kind,
  r.dataset.tokens === undefined ? null : Number(r.dataset.tokens)]))"""


def own_counts(session: Session) -> list[int]:
    """The session's per-message counts (exact, else the planner's estimate)."""
    counts = session.token_counts()
    return list(counts) if counts is not None else list(session.plan_history().tokens())


def logs_of(fmt: str, src: Path, out: Path) -> list[list[dict[str, Any]]]:
    """Each transcript of ``src`` written as ``log import`` writes it: the reports of its logs."""
    logs = []
    for index, conv in enumerate(convert(fmt, src, branches="all")):
        sid = f"{src.stem}-{index}"
        logs.append(write_logs(plan_logs(conv, out / f"{sid}.jsonl", sid)))
    return logs


def check_page(browser: Browser, page: Path, logs: list[dict[str, Any]]) -> None:
    browser.open(page, timeout=120)
    rows = json.loads(browser.js(ROWS))
    by_session: dict[str, dict[int, tuple[str, int | None]]] = {}
    for sid, seq, kind, tokens in rows:
        assert seq not in by_session.setdefault(sid, {}), (page, sid, seq)
        by_session[sid][seq] = (kind, tokens)
    for log in logs:
        session = Session.load(log["path"])
        parent = log["parent"] or {}
        first = parent["atSeq"] + 1 if parent.get("kind") == "fork" else 0
        shown = by_session[session.id]
        assert sorted(shown) == list(range(first, len(session))), (page, session.id)
        for seq in shown:
            assert shown[seq][0] == session.events[seq]["type"]
        if first == 0:
            for seq, n in zip(session.surface_seqs(), own_counts(session), strict=True):
                assert shown[seq][1] == n, (page, session.id, seq)
    folds = browser.js("document.querySelectorAll('[data-fold]').length")
    main = Session.load(logs[0]["path"])
    expected = [
        e for e in main.events if isinstance(e.get("surfaceOp"), dict) and e["surfaceOp"]["op"] == "fold"
    ]
    assert folds >= len(expected)


@pytest.mark.slow
def test_every_corpus_transcript_is_viewed_whole(corpus: Path, tmp_path: Path) -> None:
    jobs = corpus_transcripts(corpus)
    assert len(jobs) >= 70
    browser = Browser()
    try:
        for number, (fmt, src) in enumerate(jobs):
            for index, logs in enumerate(logs_of(fmt, src, tmp_path / str(number))):
                main = Session.load(logs[0]["path"])
                page = render(main, Path(logs[0]["path"]).parent)
                assert len(page.sessions) == len({log["path"] for log in logs}), src
                sizes = sum(Path(log["path"]).stat().st_size for log in logs)
                assert len(page.html.encode()) <= 3 * sizes + 300_000, src
                if index == 0:  # a multi-transcript file: its first in the browser
                    out = tmp_path / f"{number}-{index}.html"
                    page.write(out)
                    check_page(browser, out, logs)
                result = breakdown(main, tools=request_tools(main))
                assert sum(result.categories.values()) == result.total
                assert result.total == int(main.token_count(tools=request_tools(main))), src
    finally:
        browser.close()


def test_a_claude_code_session_with_sub_agents(corpus: Path, tmp_path: Path) -> None:
    log = import_transcript(corpus / SPOTTER / f"{WITH_AGENTS}.jsonl", tmp_path / "logs", tmp_path / "home")
    page = tmp_path / "page.html"
    html = view(log, page, tmp_path / "home")
    dom = parse(dump_dom(page, "search=ActiveSessionRegistry"))
    children = [p for p in log.parent.glob("*.jsonl") if p != log]
    assert len(children) == 2
    holders = {e.attrs["data-session"] for e in dom.find("data-session") if "session" in e.classes}
    assert holders == {log.stem, *(Session.load(p).id for p in children)}
    session = Session.load(log)
    digests = [e["seq"] for e in session.events if isinstance(e.get("surfaceOp"), dict)]
    assert [e.attrs["data-fold"] for e in dom.find("data-fold")] == [str(s) for s in digests]
    hits = dom.find("data-hit")
    sessions = {s.id: s for s in [session, *(Session.load(p) for p in children)]}
    assert hits
    for hit in hits:
        holder = next(a.attrs["data-session"] for a in hit.ancestors() if "session" in a.classes)
        event = sessions[holder].events[int(hit.attrs["data-seq"])]
        assert "activesessionregistry" in json.dumps(thaw(event), ensure_ascii=False).lower()
    (count,) = dom.find("data-hits")
    assert int(count.attrs["data-hits"]) == len(hits)
    assert len(html.encode()) <= 3 * sum(p.stat().st_size for p in log.parent.glob("*.jsonl")) + 300_000


@pytest.mark.slow
def test_a_10_mb_log_shows_its_first_screen_within_2_s(tmp_path: Path) -> None:
    import random

    session = Session.open(tmp_path / "big.jsonl", system="You are a test assistant.")
    rnd = random.Random(7)
    words = ["alpha", "beta", "gamma", "delta", "file", "line", "error", "value", "config", "module"]
    session.add({"role": "user", "content": "start the big job"})
    for i in range(1400):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"n": {i}}}'}}
        session.add({"role": "assistant", "content": f"step {i}", "tool_calls": [call]})
        text = "\n".join(" ".join(rnd.choice(words) for _ in range(12)) for _ in range(100))
        session.add({"role": "tool", "tool_call_id": f"c{i}", "name": "read", "content": text})
    session.close()
    size = (tmp_path / "big.jsonl").stat().st_size
    assert size >= 10_000_000
    page = tmp_path / "big.html"
    html = view(tmp_path / "big.jsonl", page, tmp_path / "home")
    assert len(html.encode()) <= 3 * size + 300_000
    browser = Browser()
    try:
        first = browser.open(page, timeout=120)
        assert first < 2000, f"the first screen took {first:.0f} ms"
        assert browser.js("document.querySelectorAll('[data-seq]').length") == len(
            Session.load(page.parent / "big.jsonl")
        )
    finally:
        browser.close()
