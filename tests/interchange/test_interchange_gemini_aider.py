"""Gemini CLI sessions and aider chat histories (issue 18, item 3): every corpus file, counted
against the source read independently."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from foldlog.interchange import FORMATS, TranscriptError, convert
from foldlog.interchange.writer import write_conversation
from foldlog.log.session import Session
from tests.cli.cli_testlib import aider_files, check_well_formed, gemini_files, run_cli

# --- Gemini CLI ----------------------------------------------------------------------------


def ms(stamp: str) -> int:
    return round(datetime.fromisoformat(stamp).timestamp() * 1000)


def test_gemini_counts_match_source(corpus: Path) -> None:
    files = gemini_files(corpus)
    assert len(files) == 2
    for path in files:
        doc = json.loads(path.read_text(encoding="utf-8"))
        (conv,) = convert("gemini", path)
        kinds = [m["type"] for m in doc["messages"]]
        calls = [c for m in doc["messages"] for c in m.get("toolCalls") or []]
        assert conv.id == doc["sessionId"]
        assert conv.counts.messages["user"] == kinds.count("user"), path
        assert conv.counts.messages["assistant"] == kinds.count("gemini"), path
        assert conv.counts.tool_calls == conv.counts.tool_results == len(calls) > 5, path
        check_well_formed(conv.events)
        # each call keeps its id, name, arguments and the output the model was given
        recorded = [ev.data for ev in conv.events if ev.type == "tool/call"]
        assert [(r["callId"], r["name"], json.loads(r["arguments"])) for r in recorded] == [
            (c["id"], c["name"], c["args"]) for c in calls
        ]
        results = [ev.data["message"] for ev in conv.events if ev.type == "tool/result"]
        for result, call in zip(results, calls, strict=True):
            output = call["result"][0]["functionResponse"]["response"].get("output")
            assert result["toolCallId"] == call["id"] and result["isError"] == (call["status"] != "success")
            if isinstance(output, str):
                assert result["content"] == output
        # usage, reasoning and times come from the source
        replies = [ev for ev in conv.events if ev.type == "assistant/message"]
        sources = [m for m in doc["messages"] if m["type"] == "gemini"]
        for ev, src in zip(replies, sources, strict=True):
            tokens = src["tokens"]
            assert ev.data["usage"]["promptTokens"] == tokens["input"]
            assert ev.data["usage"]["cacheHitTokens"] == tokens["cached"]
            assert ev.data["usage"]["reasoningTokens"] == tokens["thoughts"]
            assert ev.time == ms(src["timestamp"])
            if src.get("thoughts"):
                assert src["thoughts"][0]["description"] in ev.data["message"]["reasoning_content"]
        assert conv.meta["model"].startswith("gemini") and conv.meta["source"] == path.name


def test_gemini_bad_input_is_named(tmp_path: Path) -> None:
    bad = tmp_path / "s.json"
    bad.write_text('{"sessionId": "x"}')
    with pytest.raises(TranscriptError, match='"messages"'):
        convert("gemini", bad)
    bad.write_text("[1, 2]")
    with pytest.raises(TranscriptError, match="JSON object"):
        convert("gemini", bad)


# --- aider ---------------------------------------------------------------------------------


def aider_source(path: Path) -> tuple[int, int, int]:
    """(sessions, user messages, non-blank characters of the transcript) read straight from
    the markdown: a session per start line (plus the text before the first one), a user
    message per run of ``####`` lines."""
    text = path.read_text(encoding="utf-8")
    if text.startswith("---\n"):  # a website example: only what is inside the transcript blocks
        text = "\n".join(re.findall(r'<div class="chat-transcript"[^>]*>\n(.*?)\n</div>', text, re.S))
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("# aider chat started at ")]
    preamble = lines[: starts[0]] if starts else lines
    sessions = len(starts) + any(x.strip() and not x.startswith("-*- mode:") for x in preamble)
    users = sum(
        1
        for i, line in enumerate(lines)
        if line.startswith("####") and (i == 0 or not lines[i - 1].startswith("####"))
    )
    chars = 0
    for line in lines:
        if line.startswith("# aider chat started at ") or line.startswith("-*- mode:"):
            continue
        chars += _weight(line)
    return sessions, users, chars


def _weight(text: str) -> int:
    """Non-blank characters but for the markers ``#`` and ``>`` (where a line starts with them
    they are the format's, elsewhere the text's: counted alike on both sides, left out)."""
    return sum(1 for ch in text if not ch.isspace() and ch not in "#>")


def imported_chars(convs: list[object]) -> int:
    total = 0
    for conv in convs:
        assert hasattr(conv, "events") and hasattr(conv, "meta")
        texts: list[str] = [conv.meta.get("banner", "")]
        for ev in conv.events:
            if ev.type == "user/message":
                texts.append(ev.data["content"])
            elif ev.type == "assistant/message":
                texts.append(ev.data["message"]["content"])
            texts.extend(ev.data.get("console", []))
        total += sum(_weight(t) for t in texts)
    return total


def test_aider_every_corpus_file(corpus: Path) -> None:
    files = aider_files(corpus)
    assert len(files) == 15
    total_sessions = 0
    for path in files:
        convs = convert("aider", path)
        sessions, users, chars = aider_source(path)
        assert len(convs) == sessions, path
        assert sum(c.counts.messages["user"] for c in convs) == users, path
        # every line of the transcript is somewhere: a prompt, a reply, console output, a banner
        assert imported_chars(list(convs)) == chars, path
        for conv in convs:
            check_well_formed(conv.events)
            assert conv.counts.tool_calls == 0 and conv.meta["source"] == path.name
        assert len({c.id for c in convs}) == len(convs)
        total_sessions += len(convs)
    assert total_sessions == 1134 + 14


def test_aider_mapping_on_the_real_history(corpus: Path) -> None:
    convs = convert("aider", corpus / "aider/chat-history.md")
    assert sum(c.counts.messages["user"] for c in convs) == 1776
    started = [c for c in convs if "startedAt" in c.meta]
    assert len(started) == 1133 and "startedAt" not in convs[0].meta  # the tail of an earlier session
    first = started[0]
    assert first.meta["startedAt"] == "2024-08-05 19:33:02"
    assert "--lint --commit" in first.meta["banner"] and first.meta["model"] == "claude-3-5-sonnet-20240620"
    assert first.events == []  # a start that only printed a banner
    chat = next(c for c in started if c.counts.messages["assistant"] >= 2)
    day, hour = chat.meta["startedAt"].split(" ")
    expected = int(datetime.fromisoformat(f"{day}T{hour}+00:00").timestamp() * 1000)
    assert {ev.time for ev in chat.events} == {expected}
    # a reply keeps the console output that followed it; the console never joins the history
    reply = next(ev for ev in chat.events if ev.type == "assistant/message" and ev.data.get("console"))
    assert any("Applied edit" in text or "Commit" in text for text in reply.data["console"])
    assert reply.data["model"] == chat.meta["model"]
    session = Session(id="aider")
    write_conversation(chat, session)
    derived = " ".join(str(m["content"]) for m in session.derive_messages())
    assert "Applied edit to" not in derived and reply.data["message"]["content"][:40] in derived
    stored = next(
        ev for ev in session.events if ev["type"] == "assistant/message" and "console" in ev["data"]
    )
    assert list(stored["data"]["console"]) == reply.data["console"]


def test_aider_fences_and_website_pages(tmp_path: Path) -> None:
    page = tmp_path / "example.md"
    page.write_text(
        "---\nparent: Examples\n---\n\n# A page\n\nIntro text.\n\n"
        '<div class="chat-transcript" markdown="1">\n'
        "> $ aider hello.py  \n\n"
        "#### change hello  \n#### to goodbye  \n\n"
        "Here is the change:\n\n```python\n> not console: inside a fence\n#### but this is a prompt\n\n"
        "Done.\n\n> Applied edit to hello.py  \n"
        "</div>\n\nOutro.\n",
        encoding="utf-8",
    )
    (conv,) = convert("aider", page)
    assert conv.meta["banner"] == "$ aider hello.py"
    users = [ev.data["content"] for ev in conv.events if ev.type == "user/message"]
    assert users == ["change hello\nto goodbye", "but this is a prompt"]
    replies = [ev.data for ev in conv.events if ev.type == "assistant/message"]
    assert (
        replies[0]["message"]["content"] == "Here is the change:\n\n```python\n> not console: inside a fence"
    )
    assert replies[1]["message"]["content"] == "Done." and replies[1]["console"] == [
        "Applied edit to hello.py"
    ]
    assert "Intro" not in json.dumps([ev.data for ev in conv.events]) and "startedAt" not in conv.meta
    empty = tmp_path / "empty.md"
    empty.write_text("\n\n")
    with pytest.raises(TranscriptError, match="no aider session"):
        convert("aider", empty)


def test_gemini_and_aider_are_registered_and_imported_by_the_cli(tmp_path: Path, corpus: Path) -> None:
    assert {"gemini", "aider"} <= set(FORMATS)
    src = gemini_files(corpus)[0]
    proc = run_cli(
        "log", "import", "--from", "gemini", str(src), "-o", str(tmp_path / "g.jsonl"), home=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "10 tool calls, 10 tool results" in proc.stdout
    out = tmp_path / "aider"
    proc = run_cli(
        "log",
        "import",
        "--from",
        "aider",
        str(corpus / "aider/website-examples/pong.md"),
        "-o",
        f"{out}/",
        home=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    (log,) = out.iterdir()
    session = Session.load(log)
    header = session.header
    assert header is not None and header["meta"]["imported"]["format"] == "aider"
    assert len(session.derive_messages()) == 10
