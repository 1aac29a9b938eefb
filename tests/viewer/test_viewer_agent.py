"""`foldlog log view` on a session the agent wrote, checked in headless Chromium: a marker for every
event of every session, the session's own token counts, the fold and what it folded, the
sub-agent under its call, the fork at its event, the image, usage and cost, the context of a
request as the core derives it, search, expanding, keys, and redaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldlog import Session
from foldlog import _core as _native
from foldlog.log.grammar import kinds
from tests.viewer.browser import Browser, Element, dump_dom, find_chromium, parse
from tests.viewer.viewer_sessions import AGENT_ID, FORK_ID, SECRET, agent_session, logs_bytes, view


@pytest.fixture(scope="module")
def agent_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("agent")
    log = agent_session(folder)
    page = tmp_path_factory.mktemp("page") / "page.html"
    view(log, page, tmp_path_factory.mktemp("home"))
    return log, page


@pytest.fixture(scope="module")
def dom(agent_page: tuple[Path, Path]) -> Element:
    return parse(dump_dom(agent_page[1]))


def session_of(row: Element) -> str:
    """The id of the session whose timeline holds ``row``."""
    return next(a.attrs["data-session"] for a in row.ancestors() if "session" in a.classes)


def rows_by_session(dom: Element) -> dict[str, dict[int, Element]]:
    out: dict[str, dict[int, Element]] = {}
    for row in dom.find("data-seq"):
        out.setdefault(session_of(row), {})[int(row.attrs["data-seq"])] = row
    return out


def child_id(log: Path) -> str:
    (child,) = [p for p in log.parent.glob("*.jsonl") if p.stem not in (AGENT_ID, FORK_ID)]
    return Session.load(child).id


def test_every_event_of_every_session_has_its_row(agent_page: tuple[Path, Path], dom: Element) -> None:
    log, _ = agent_page
    rows = rows_by_session(dom)
    parent, child = Session.load(log), Session.load(log.parent / f"{child_id(log)}.jsonl")
    fork = Session.load(log.parent / f"{FORK_ID}.jsonl")
    assert set(rows) == {AGENT_ID, child.id, FORK_ID}
    assert sorted(rows[AGENT_ID]) == list(range(len(parent)))
    assert sorted(rows[child.id]) == list(range(len(child)))
    at = fork.parent["atSeq"] if fork.parent else -1
    assert sorted(rows[FORK_ID]) == list(range(at + 1, len(fork)))  # its own events; the rest is the parent's
    for sid, by_seq in rows.items():
        events = {AGENT_ID: parent, child.id: child, FORK_ID: fork}[sid].events
        assert all(row.attrs["data-kind"] == events[seq]["type"] for seq, row in by_seq.items())


def test_messages_carry_the_sessions_own_token_counts(agent_page: tuple[Path, Path], dom: Element) -> None:
    log, _ = agent_page
    session = Session.load(log)
    counts = session.token_counts()
    assert counts is not None  # an exact tokenizer: the page shows the session's own counts
    rows = rows_by_session(dom)[AGENT_ID]
    for seq, n in zip(session.surface_seqs(), counts, strict=True):
        assert int(rows[seq].attrs["data-tokens"]) == n
    digest = next(
        e for e in session.events if isinstance(e.get("surfaceOp"), dict) and e["surfaceOp"]["op"] == "fold"
    )
    for seq in digest["sourceEventSeqs"]:  # folded away: counted as the model saw them, before the fold
        assert int(rows[seq].attrs["data-tokens"]) > 0 and "gone" in rows[seq].classes


def test_the_fold_is_marked_with_what_it_folded(agent_page: tuple[Path, Path], dom: Element) -> None:
    log, page = agent_page
    session = Session.load(log)
    digest = next(
        e for e in session.events if isinstance(e.get("surfaceOp"), dict) and e["surfaceOp"]["op"] == "fold"
    )
    (marked,) = dom.find("data-fold")
    assert marked.attrs["data-fold"] == str(digest["seq"]) == marked.attrs["data-seq"]
    rows = rows_by_session(dom)[AGENT_ID]
    for seq in digest["sourceEventSeqs"]:
        assert f"folded into #{digest['seq']}" in rows[seq].all_text()
    opened = parse(dump_dom(page, f"expand={digest['seq']}"))
    row = rows_by_session(opened)[AGENT_ID][digest["seq"]]
    listed = [int(m.attrs["data-ref"]) for m in row.find("data-ref")]
    assert listed == digest["sourceEventSeqs"]  # the folded messages, one click away
    assert "Summary: the user asked for k and q" in row.all_text()  # and the digest itself


def test_the_sub_agent_is_nested_under_its_call_and_the_fork_at_its_event(
    agent_page: tuple[Path, Path], dom: Element
) -> None:
    log, _ = agent_page
    session = Session.load(log)
    child = child_id(log)
    holders = {e.attrs["data-session"]: e for e in dom.find("data-session") if "session" in e.classes}
    call_seq = next(
        e["seq"] for e in session.events if e["type"] == kinds.TOOL_CALL and e["data"]["callId"] == "t1"
    )
    under = [a.attrs.get("data-seq") for a in holders[child].ancestors() if "data-seq" in a.attrs]
    assert under[0] == str(call_seq)
    fork = Session.load(log.parent / f"{FORK_ID}.jsonl")
    under = [a.attrs.get("data-seq") for a in holders[FORK_ID].ancestors() if "data-seq" in a.attrs]
    assert fork.parent is not None and under[0] == str(fork.parent["atSeq"])


def test_images_usage_and_cost_are_shown(agent_page: tuple[Path, Path], dom: Element) -> None:
    log, _ = agent_page
    session = Session.load(log)
    rows = rows_by_session(dom)[AGENT_ID]
    image_seq = next(e["seq"] for e in session.events if isinstance(e["data"].get("content"), list))
    (img,) = [c for c in _walk(rows[image_seq]) if c.tag == "img"]
    assert img.attrs["src"].startswith("data:image/png;base64,")
    replies = [e for e in session.events if e["type"] == kinds.ASSISTANT_MESSAGE and e["data"].get("usage")]
    for reply in replies:
        usage = reply["data"]["usage"]
        assert rows[reply["seq"]].attrs["data-cache-hit"] == str(usage.get("cacheHitTokens", 0))
        assert f"in {usage['promptTokens']:,}" in rows[reply["seq"]].all_text()
    assert any(r.attrs["data-cache-hit"] == "640" for r in rows.values() if "data-cache-hit" in r.attrs)


def _walk(node: Element) -> list[Element]:
    out = [node]
    for child in node.children:
        out += _walk(child)
    return out


def test_the_context_of_a_request_is_the_history_the_core_derives(agent_page: tuple[Path, Path]) -> None:
    log, page = agent_page
    session = Session.load(log)
    replies = [e["seq"] for e in session.events if e["type"] == kinds.ASSISTANT_MESSAGE]
    for seq in (replies[1], replies[-1]):  # before the fold, and after it
        opened = parse(dump_dom(page, f"context={seq}"))
        (box,) = opened.find("data-context")
        shown = [int(m.attrs["data-ref"]) for m in box.find("data-ref")]
        prefix, _ = _native.Log.parse(session._core.event_lines(0, seq), "<prefix>")
        assert shown == prefix.surface_nodes()


def test_search_marks_every_matching_event(agent_page: tuple[Path, Path]) -> None:
    log, page = agent_page
    opened = parse(dump_dom(page, "search=value-of-q"))
    hits = [r for r in opened.find("data-hit")]
    assert hits
    (count,) = [e for e in opened.find("data-hits")]
    assert int(count.attrs["data-hits"]) == len(hits)
    sessions = {AGENT_ID: Session.load(log), FORK_ID: Session.load(log.parent / f"{FORK_ID}.jsonl")}
    for row in hits:
        event = sessions[session_of(row)].events[int(row.attrs["data-seq"])]
        assert "value-of-q" in json.dumps(_plain(event["data"]))
    expected = [
        e["seq"]
        for e in sessions[AGENT_ID].events
        if e["type"] in (kinds.TOOL_RESULT, kinds.ASSISTANT_MESSAGE)
        and "value-of-q" in json.dumps(_plain(e["data"]))
    ]
    found = sorted(int(r.attrs["data-seq"]) for r in hits if session_of(r) == AGENT_ID)
    assert set(expected) <= set(found)


def _plain(value: object) -> object:
    from foldlog.log.frozen import thaw

    return thaw(value)


def test_a_long_output_opens_whole(agent_page: tuple[Path, Path]) -> None:
    log, page = agent_page
    session = Session.load(log)
    result = next(
        e
        for e in session.events
        if e["type"] == kinds.TOOL_RESULT and e["data"]["message"]["toolName"] == "lookup"
    )
    opened = parse(dump_dom(page, f"expand={result['seq']}"))
    row = rows_by_session(opened)[AGENT_ID][result["seq"]]
    assert "open" in row.classes
    assert result["data"]["message"]["content"].strip() in row.all_text()


def test_keys_move_between_steps_and_typing_searches(agent_page: tuple[Path, Path]) -> None:
    _, page = agent_page
    browser = Browser()
    try:
        browser.open(page)
        current = (
            "document.querySelector('.step.current') && document.querySelector('.step.current').dataset.step"
        )
        steps = browser.js(
            "Array.from(document.querySelectorAll('.step'))"
            ".filter(e => e.offsetParent).map(e => e.dataset.step)"
        )
        browser.key("j")
        assert browser.js(current) == steps[0]
        browser.key("j")
        browser.key("ArrowDown")
        assert browser.js(current) == steps[2]
        browser.key("k")
        assert browser.js(current) == steps[1]
        browser.key("o")
        assert browser.js(
            "Array.from(document.querySelector('.step.current').querySelectorAll(':scope > .ev'))"
            ".every(r => r.classList.contains('open'))"
        )
        browser.key("/")
        browser.type("value-of-q")
        browser.js("new Promise(r => setTimeout(r, 400))")
        assert int(browser.js("document.getElementById('search-count').dataset.hits")) >= 1
    finally:
        browser.close()


def test_secrets_are_redacted_unless_asked(agent_page: tuple[Path, Path], tmp_path: Path) -> None:
    log, page = agent_page
    html = page.read_text(encoding="utf-8")
    assert SECRET not in html and "[REDACTED api-key]" in html
    shown = dump_dom(page)
    assert SECRET not in shown and "[REDACTED api-key]" in shown
    plain = view(log, tmp_path / "plain.html", tmp_path / "home", "--no-redact")
    assert SECRET in plain


def test_the_page_is_self_contained_and_small(agent_page: tuple[Path, Path]) -> None:
    log, page = agent_page
    html = page.read_text(encoding="utf-8")
    assert len(html.encode()) <= 3 * logs_bytes(log.parent) + 300_000
    assert "http://" not in html.split("<script", 1)[0] and "<link" not in html and 'src="http' not in html
    assert "default-src 'none'" in html  # the page's policy: nothing from the network


def test_a_missing_chromium_fails_saying_how_to_install_it() -> None:
    with pytest.raises(pytest.fail.Exception, match=r"install-chromium\.sh"):
        find_chromium(path="/nonexistent")
