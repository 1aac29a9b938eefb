"""Exports that tell the truth: every block a format cannot carry is a warning naming the message
and the block (``strict`` makes it an error), ATIF images keep their media type and agent steps
their cost, foldlog's own folds and resets read back with every message, and what README and
docs/interchange.md say round-trips is checked here."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from foldlog import Agent, Options, Session, thaw, tool
from foldlog.cost.prices import Cost, price_request
from foldlog.errors import ExportError
from foldlog.interchange import convert, export, write_conversation
from foldlog.interchange.exports.atif_schema import atif_errors
from foldlog.log.grammar.types import Usage
from foldlog.providers import Scripted
from tests.cli.cli_testlib import corpus_transcripts, run_cli
from tests.compaction.plan_checks import digest_indices
from tests.interchange.test_interchange_export import comparable

AUDIO = {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}
PDF_FILE = {
    "type": "file",
    "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"},
}
PDF_DOC = {
    "type": "document",
    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
}
SVG = {"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,PHN2Zz4="}}
BMP_LINK = {"type": "image_url", "image_url": {"url": "https://x.example/a.bmp"}}
WEBP = {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "UklGRg=="}}
JPEG = {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/"}}


def _media_session() -> Session:
    s = Session(id="media", system="sys")
    s.add(
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, AUDIO, PDF_FILE, PDF_DOC, SVG, BMP_LINK],
        }
    )
    call = {"id": "c1", "type": "function", "function": {"name": "listen", "arguments": "{}"}}
    s.add({"role": "assistant", "content": "", "tool_calls": [call]})
    s.add(
        {
            "role": "tool",
            "tool_call_id": "c1",
            "content": [{"type": "text", "text": "heard"}, AUDIO, WEBP, JPEG],
        }
    )
    s.add({"role": "assistant", "content": "ok"})
    return s


def test_blocks_a_format_cannot_carry_are_warned_naming_the_message_and_the_block() -> None:
    s = _media_session()
    codex = export(s, "codex")
    assert [w for w in codex.warnings if "block" in w] == [
        "message #1 (user) block 1 (input_audio, audio/wav): Codex has no input_audio part (text and images "
        "only) — written as the text '[input_audio]'",
        "message #1 (user) block 2 (file, application/pdf): Codex has no file part (text and images only) — "
        "written as the text '[file]'",
        "message #1 (user) block 3 (document, application/pdf): Codex has no document part (text and images "
        "only) — written as the text '[document]'",
        "message #3 (tool result of c1) block 1 (input_audio, audio/wav): Codex has no input_audio part "
        "(text and images only) — written as the text '[input_audio]'",
    ]
    assert '"text": "[input_audio]"' in codex.text
    atif = export(s, "atif")
    atif_blocks = [w.split(":")[0] for w in atif.warnings if "block" in w]
    assert atif_blocks == [
        "message #1 (user) block 1 (input_audio, audio/wav)",
        "message #1 (user) block 2 (file, application/pdf)",
        "message #1 (user) block 3 (document, application/pdf)",
        "message #1 (user) block 4 (image_url, image/svg+xml)",
        "message #1 (user) block 5 (image_url, image/bmp)",
        "message #3 (tool result of c1) block 1 (input_audio, audio/wav)",
    ]
    assert json.loads(atif.text)["notes"] == "; ".join(atif.warnings)
    claude = export(s, "claude-code")  # images, documents and files (as documents) are carried
    assert [w.split(":")[0] for w in claude.warnings if "block" in w] == [
        "message #1 (user) block 1 (input_audio, audio/wav)",
        "message #3 (tool result of c1) block 1 (input_audio, audio/wav)",
    ]
    first = json.loads(claude.text.splitlines()[0])["message"]["content"]
    assert first[2] == {**PDF_DOC, "title": "a.pdf"} and first[3] == PDF_DOC
    assert export(s, "openai").warnings == []  # the derived messages hold every block


@pytest.mark.parametrize("fmt", ["codex", "atif", "claude-code"])
def test_strict_makes_every_warning_an_error(fmt: str) -> None:
    with pytest.raises(ExportError, match=r"message #1 \(user\) block 1 \(input_audio, audio/wav\)"):
        export(_media_session(), fmt, strict=True)
    plain = Session(id="plain")
    plain.add({"role": "user", "content": "hi"})
    plain.add({"role": "assistant", "content": "hello"})
    assert export(plain, fmt, strict=True).warnings == []


def test_atif_images_keep_the_media_type_of_the_image() -> None:
    s = Session(id="images")
    gif = {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}
    jpg_link = {"type": "image_url", "image_url": {"url": "https://x.example/photo.JPG?size=2"}}
    unknown = {"type": "image_url", "image_url": {"url": "https://x.example/render?id=3"}}
    s.add({"role": "user", "content": [WEBP, gif, jpg_link, SVG, unknown]})
    s.add({"role": "assistant", "content": "seen"})
    out = export(s, "atif")
    doc = json.loads(out.text)
    assert atif_errors(doc) == []
    parts = doc["steps"][0]["message"]
    assert [p["source"]["media_type"] for p in parts if p["type"] == "image"] == [
        "image/webp",
        "image/gif",
        "image/jpeg",
    ]
    assert parts[3] == {"type": "text", "text": "[image]"}  # SVG: not an ATIF image type
    assert parts[4] == {"type": "text", "text": "[image: https://x.example/render?id=3]"}
    assert "block 3 (image_url, image/svg+xml): ATIF images must be image/jpeg" in out.warnings[0]
    assert "block 4 (image_url): its media type cannot be told" in out.warnings[1]


def _reply(seq_usage: dict[str, int], model: str, cost: Cost | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {
        "turn": 0,
        "step": 0,
        "message": {"role": "assistant", "content": "x"},
        "usage": seq_usage,
        "model": model,
    }
    if cost is not None:
        data["cost"] = cost.to_log()
    return data


def test_atif_steps_carry_the_recorded_cost_or_the_cost_layers_price() -> None:
    s = Session(id="costs")
    s.add({"role": "user", "content": "q"})
    recorded = Cost(input=0.001, output=0.002, source="recorded-table")
    usage = {"promptTokens": 1000, "completionTokens": 200, "cacheHitTokens": 100}
    s.append_event("assistant/message", _reply(usage, "claude-sonnet-4-5", recorded), surface_op="append")
    s.add({"role": "user", "content": "again"})
    s.append_event("assistant/message", _reply(usage, "claude-sonnet-4-5"), surface_op="append")
    doc = json.loads(export(s, "atif").text)
    agent = [step for step in doc["steps"] if step["source"] == "agent"]
    priced = price_request(Usage.from_dict(usage), "claude-sonnet-4-5")
    assert priced is not None
    assert agent[0]["metrics"]["cost_usd"] == pytest.approx(0.003)
    assert agent[0]["metrics"]["extra"]["cost"] == {"currency": "USD", "source": "recorded-table"}
    assert agent[1]["metrics"]["cost_usd"] == pytest.approx(priced.total)
    assert doc["final_metrics"]["total_cost_usd"] == pytest.approx(0.003 + priced.total)
    assert atif_errors(doc) == []
    unknown = Session(id="unpriced")
    unknown.add({"role": "user", "content": "q"})
    unknown.append_event("assistant/message", _reply(usage, "no-such-model-xyz"), surface_op="append")
    out = export(unknown, "atif")
    assert "total_cost_usd" not in json.loads(out.text)["final_metrics"]
    assert any("total_cost_usd left out: 1 of 1 request(s) have no price" in w for w in out.warnings)


# --- foldlog's own folds --------------------------------------------------------------------------

WINDOW = 4_000


@tool(read_only=True)
def fetch(n: int) -> str:
    """Fetch a large page."""
    return f"output {n}: " + "x" * 4_000


def _step(n: int, prompt: int) -> dict[str, Any]:
    call = {"id": f"c{n}", "name": "fetch", "arguments": {"n": n}}
    return {"content": "", "tool_calls": [call], "usage": {"prompt_tokens": prompt, "completion_tokens": 5}}


def _folded_session() -> Session:
    """A run that folds twice (the compactor keeps the first prompt, and the first digest, before
    the second digest; the last call group after it), then a second turn."""
    summaries = [
        {"content": f"## Goal\n- fold {i}", "usage": {"prompt_tokens": 50, "completion_tokens": 20}}
        for i in (1, 2)
    ]
    replies: list[Any] = [_step(1, 1000), _step(2, 2000), _step(3, 3300), _step(4, 2000), _step(5, 3400)]
    replies += [{"content": "done", "usage": {"prompt_tokens": 1500, "completion_tokens": 5}}]
    replies += [{"content": "still done", "usage": {"prompt_tokens": 1600, "completion_tokens": 5}}]
    session = Session(system="You are a test assistant.", id="folded")
    options = Options(context_window=WINDOW, summary_provider=Scripted(summaries), prune_min_bytes=10**9)
    agent = Agent(Scripted(replies, context_window=WINDOW), [fetch], session, options)
    assert agent.run_sync("fetch the pages") == "done"
    assert agent.run_sync("and now?") == "still done"
    return session


def _read_back(session: Session, fmt: str, tmp_path: Path) -> Session:
    out = tmp_path / f"back.{fmt}.jsonl"
    export(session, fmt).write(out)
    (conv,) = convert(fmt, out)
    back = Session(id="back")
    write_conversation(conv, back)
    return back


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_a_session_folded_by_foldlog_reads_back_with_every_message(fmt: str, tmp_path: Path) -> None:
    session = _folded_session()
    messages = thaw(list(session.derive_messages()))
    digest = digest_indices(session)[-1]
    lead = 1  # the system prompt
    assert digest > lead, "the fold kept messages before its digest"
    # the formats' compaction keeps nothing before its summary: the messages the fold kept
    # before its digest are written again after it, so they read back after the summary
    expected = [*messages[:lead], messages[digest], *messages[lead:digest], *messages[digest + 1 :]]
    back = thaw(list(_read_back(session, fmt, tmp_path).derive_messages()))
    assert comparable(back, fmt) == comparable(expected, fmt)
    assert Counter(m["role"] for m in comparable(back, fmt)) == Counter(
        m["role"] for m in comparable(messages, fmt)
    )
    warnings = export(session, fmt).warnings
    assert any(
        "kept 2 message(s) before its digest" in w and "written again after its summary" in w
        for w in warnings
    )


def test_atif_marks_the_messages_a_fold_kept_as_copied_context() -> None:
    session = _folded_session()
    doc = json.loads(export(session, "atif").text)
    assert atif_errors(doc) == []
    copies = [s for s in doc["steps"] if s.get("is_copied_context")]
    assert [s["message"][:15] for s in copies] == ["fetch the pages", "fetch the pages", "<compaction-sum"]
    agent = [s for s in doc["steps"] if s["source"] == "agent"]
    requests = [e for e in session.events if e["type"] == "assistant/message"]
    assert len(agent) == len(requests) and all(s["llm_call_count"] == 1 for s in agent)
    prompt = sum(int(e["data"]["usage"]["promptTokens"]) for e in requests)
    assert doc["final_metrics"]["total_prompt_tokens"] == prompt  # copies add no tokens


def test_a_context_reset_reads_back_from_claude_code_as_a_new_root(tmp_path: Path) -> None:
    s = Session(id="restart")
    s.add({"role": "user", "content": "plan it"})
    s.add({"role": "assistant", "content": "the plan"})
    s.replace(
        [
            {"role": "user", "content": "Implement the following plan"},
            {"role": "assistant", "content": "done"},
        ]
    )
    back = _read_back(s, "claude-code", tmp_path)
    assert thaw(list(back.derive_messages())) == thaw(list(s.derive_messages()))
    assert any("surface reset" in w for w in export(s, "codex").warnings)
    assert any("surface reset" in w for w in export(s, "atif").warnings)


# --- what README and docs/interchange.md say round-trips -------------------------------------------


def test_openai_exports_of_the_corpus_read_back_to_the_same_messages_but_the_error_flag(
    corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "messages.json"
    transcripts = 0
    for fmt, path in corpus_transcripts(corpus):
        for conv in convert(fmt, path):
            session = Session(id="s")
            write_conversation(conv, session)
            export(session, "openai").write(out)
            (back,) = convert("openai", out)
            again = Session(id="again")
            write_conversation(back, again)

            def plain(s: Session) -> list[Any]:
                return [
                    {k: v for k, v in m.items() if k != "is_error"} for m in thaw(list(s.derive_messages()))
                ]

            assert plain(again) == plain(session), path
            transcripts += 1
    assert transcripts >= 272


def test_cli_export_notes_each_block_and_strict_fails_writing_nothing(tmp_path: Path) -> None:
    log = tmp_path / "media.jsonl"
    _media_session().save(log)
    out = tmp_path / "out.jsonl"
    done = run_cli("log", "export", "--to", "codex", str(log), "-o", str(out), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "foldlog: note: message #1 (user) block 1 (input_audio, audio/wav): Codex has no" in done.stderr
    out.unlink()
    strict = run_cli("log", "export", "--to", "codex", "--strict", str(log), "-o", str(out), home=tmp_path)
    assert strict.returncode == 1
    assert "foldlog: error: codex cannot carry all of session media (4 problem(s), strict)" in strict.stderr
    assert "Traceback" not in strict.stderr and not out.exists()


def test_batch_export_keeps_the_notes_in_its_table(tmp_path: Path) -> None:
    from foldlog.batch import run_batch

    log = tmp_path / "media.jsonl"
    _media_session().save(log)
    report = run_batch("export", [str(log)], out=tmp_path / "out", engine="serial", export_format="codex")
    [row] = report.rows
    assert row["warnings"] == 4 and row["error"] is None
    assert str(row["notes"]).startswith("message #1 (user) block 1 (input_audio, audio/wav): Codex has no")


def test_a_codex_tool_output_without_images_names_its_audio_block() -> None:
    s = Session(id="audio-only")
    s.add({"role": "user", "content": "listen"})
    call = {"id": "c1", "type": "function", "function": {"name": "listen", "arguments": "{}"}}
    s.add({"role": "assistant", "content": "", "tool_calls": [call]})
    s.add({"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "heard"}, AUDIO]})
    out = export(s, "codex")
    assert out.warnings == [
        "message #2 (tool result of c1) block 1 (input_audio, audio/wav): Codex has no input_audio part "
        "(text and images only) — written as the text '[input_audio]'"
    ]
    output = [json.loads(line)["payload"] for line in out.text.splitlines()]
    assert {"type": "function_call_output", "call_id": "c1", "output": "heard\n[input_audio]"} in output
