"""The mechanical fold's structured digest (docs/compaction.md, "The mechanical digest"): its
sections on a hand-built surface, determinism, the caps and the size budget, the fold that writes
it, and the compact-eval column of its size."""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path

from foldlog import Session
from foldlog.batch import GridPoint, run_batch
from foldlog.compaction import Compactor
from foldlog.compaction import digest as dg
from foldlog.compaction.summary import NoSummary
from tests.compaction.test_probes import SETTINGS, Message, _session, call, result, surface, user


def _messages() -> list[Message]:
    todos = {
        "todos": [
            {"content": "fix the parser", "status": "in_progress"},
            {"content": "run the tests", "status": "pending"},
        ]
    }
    return [
        user(
            "Please fix the parser (PROJ-123). You must never push to main.\nDon't touch the vendored files."
        ),
        call("1", "Read", {"file_path": "/repo/src/a.py"}),
        result("1", "# last changed in 9f3c2ab\ndef a(): ..."),
        call("2", "Edit", {"file_path": ".\\src\\b.py", "old_string": "x", "new_string": "y"}),
        result("2", "ok"),
        call("3", "Bash", {"command": "pytest  -q\ntests"}),
        result("3", "Exit code 1\nFAILED tests/test_a.py::test_a", is_error=True),
        call("4", "Bash", {"command": "ls -la && cat README.md"}),
        result("4", "total 0"),
        call("5", "TodoWrite", todos),
        result("5", "Todos have been modified successfully"),
        call("6", "Bash", {"command": "git push"}),
        result("6", "error: denied"),
        # on the surface, not folded: the push ran successfully later, so it is not unresolved
        call("7", "Bash", {"command": "git push"}),
        result("7", "done"),
    ]


HEADER = (
    "13 earlier message(s) were folded here to free context, mechanically (no model summary; the "
    "messages are kept in the session log, events #10–#130). What they did, extracted from them:"
)
EXPECTED = (
    HEADER
    + """

## Files touched (last action)
- read: /repo/src/a.py
- edited: src/b.py
- read: README.md

## Commands run (latest last)
- [exit 1] pytest -q tests
- [ok] ls -la && cat README.md
- [failed] git push

## Unresolved errors (not run successfully later)
- Bash: pytest -q tests — Exit code 1

## The user's instructions (verbatim)
- You must never push to main.
- Don't touch the vendored files.

## Plan / todo state
[in_progress] fix the parser
[pending] run the tests

## Identifiers seen (ids, URLs, versions, keys)
- ticket key (user): PROJ-123
- hex id (tool): 9f3c2ab"""
)


def _digest() -> str:
    msgs = _messages()
    folded = [True] * 13 + [False] * 2
    return dg.mechanical_digest(surface(msgs, folded), 13, "the session log, events #10–#130")


def test_the_digest_sections_on_a_hand_built_surface() -> None:
    assert _digest() == EXPECTED


def test_the_digest_is_deterministic_and_a_fold_writes_it() -> None:
    assert _digest() == _digest()
    texts = []
    for _ in range(2):
        s = Session.from_bytes(_session().to_bytes())
        result_ = asyncio.run(
            Compactor(s, NoSummary(SETTINGS.window), SETTINGS).compact("manual", force=True)
        )
        assert result_ is not None and result_.mechanical
        texts.append(result_.summary)
        [record] = [e["data"] for e in s.events if e["type"] == "compaction/summary"]
        assert record["summary"] == result_.summary and record["mechanical"] is True
    assert texts[0] == texts[1]
    assert "- read: /repo/src/alpha.py\n- edited: /repo/src/gamma.py" in texts[0]
    assert "- Bash: pytest tests/test_alpha.py — error: 1 failed" in texts[0]
    assert "## The user's instructions (verbatim)\n- You must never push to main." in texts[0]


def _many(files: int, commands: int, said: int) -> list[Message]:
    out: list[Message] = []
    for k in range(files):
        out += [call(f"r{k}", "Read", {"file_path": f"/repo/pkg/module_{k}.py"}), result(f"r{k}", "x" * 500)]
    for k in range(commands):
        out += [call(f"b{k}", "Bash", {"command": f"make step{k}"}), result(f"b{k}", "ok " * 200)]
    out += [user(f"You must keep rule number {k} in mind.") for k in range(said)]
    return out


def test_each_section_is_capped_to_its_latest_entries() -> None:
    facts = dg.digest_facts(surface(_many(dg.FILES_CAP + 30, dg.COMMANDS_CAP + 5, 3)))
    assert (
        len(facts.files) == dg.FILES_CAP
        and facts.files[-1].path == f"/repo/pkg/module_{dg.FILES_CAP + 29}.py"
    )
    assert facts.files[0].path == "/repo/pkg/module_30.py"
    assert len(facts.commands) == dg.COMMANDS_CAP and facts.commands[0].command == "make step5"
    assert facts.dropped == (30, 5, 0, 0, 0, 0)
    text = dg.render("h", facts)
    assert "- … 30 earlier file(s) not listed" in text and "- … 5 earlier command(s) not listed" in text
    long = dg.clip("x" * (dg.CLIP_OVER + 1))
    assert long == "x" * dg.CLIP_TO + "…" and dg.clip("a  b\nc") == "a b c"


def test_the_size_budget_drops_commands_then_files_never_past_the_cap() -> None:
    folded = surface(_many(40, 10, 5))
    facts = dg.digest_facts(folded)
    whole = dg.render("h", facts)
    # a quarter of the folded characters, within MIN_CHARS..MAX_CHARS
    assert dg.budget(folded) == min(
        dg.MAX_CHARS,
        max(
            dg.MIN_CHARS,
            sum(
                len(m.message.get("content") or "")
                + sum(len(c["function"]["arguments"]) for c in m.message.get("tool_calls") or ())
                for m in folded
            )
            // 4,
        ),
    )
    assert dg.budget(surface([user("hi")])) == dg.MIN_CHARS
    assert dg.budget(surface(_many(400, 0, 0))) == dg.MAX_CHARS
    cut = dg.fit("h", facts, 1_200)
    assert len(cut) <= 1_200 < len(whole)
    assert "## Commands run (latest last)\n- … 10 earlier command(s) not listed\n\n" in cut
    assert "[ok] make" not in cut
    assert "## The user's instructions (verbatim)" in cut and cut.count("You must keep rule") == 5
    assert "earlier file(s) not listed" in cut and "- read: /repo/pkg/module_39.py" in cut
    # the mechanical digest of a huge fold stays within MAX_CHARS
    assert len(dg.mechanical_digest(surface(_many(400, 400, 400)), 1_600, "x")) <= dg.MAX_CHARS
    empty = dg.mechanical_digest(surface([user("hello there")]), 1, "x")
    assert empty.endswith("(no files, commands, errors, instructions or plan found in them)")


def test_compact_eval_digest_tokens_is_a_number(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    _session().save(log)
    s = Session.from_bytes(_session().to_bytes())
    done = asyncio.run(Compactor(s, NoSummary(SETTINGS.window), SETTINGS).compact("manual", force=True))
    assert done is not None and type(done.digest_tokens) is int and done.digest_tokens > 0
    out = tmp_path / "r.csv"
    run_batch("compact-eval", [str(log)], out=out, engine="serial", points=[GridPoint(4_000, 120, "none")])
    with out.open(newline="") as f:
        [row] = list(csv.DictReader(f))
    assert row["digest_tokens"].isdigit() and int(row["digest_tokens"]) > 0, row["digest_tokens"]


# --- the summary strategy: the digest's facts given to the summariser, and kept -------------------


def test_a_summary_gets_the_facts_to_keep_and_the_ones_it_left_out_appended() -> None:
    from foldlog.compaction.summary import FACTS_LINE
    from foldlog.providers import Scripted

    briefing = "## Goal\nFix the parser.\n\n## Files & code\n- /repo/src/alpha.py read"
    s = Session.from_bytes(_session().to_bytes())
    summariser = Scripted([{"content": briefing}])
    done = asyncio.run(Compactor(s, summariser, SETTINGS).compact("manual", force=True))
    assert done is not None and not done.mechanical
    # the request carries the structured digest's sections as facts to keep
    [request] = summariser.requests
    prompt = str(request.messages[1]["content"])
    assert f"{FACTS_LINE}\n## Files touched (last action)\n- read: /repo/src/alpha.py" in prompt
    assert "- You must never push to main." in prompt
    # the briefing named alpha.py; everything else it left out is appended, nothing twice
    assert done.summary.startswith(briefing + "\n\n" + dg.LEFT_OUT + "\n\n## Files touched")
    tail = done.summary[len(briefing) :]
    assert "src/alpha.py" not in tail and "- edited: /repo/src/gamma.py" in tail
    assert "- Bash: pytest tests/test_alpha.py" in tail and "- You must never push to main." in tail
    # a summary that names every fact is left as it is
    facts = dg.digest_facts(surface(_messages(), [True] * 13 + [False] * 2))
    assert dg.complete(EXPECTED, facts, 10_000) == EXPECTED
    assert dg.missing(EXPECTED, facts).empty and not dg.missing("nothing", facts).empty


def test_an_earlier_digest_folded_again_is_carried_into_the_new_one() -> None:
    from foldlog.compaction.facts import Folded
    from foldlog.compaction.summary import digest_content

    earlier: Message = {"role": "user", "content": digest_content(EXPECTED)}
    later = [
        call("8", "Write", {"file_path": "src/b.py", "content": "x"}),
        result("8", "ok"),
        call("9", "Bash", {"command": "pytest -q tests"}),
        result("9", "Exit code 0\n3 passed with pytest 3.1.4"),
        call("10", "Read", {"file_path": "/repo/src/c.py"}),
        result("10", "c"),
    ]
    folded = [Folded(0, 5, earlier, True, True), *surface(later)]
    text = dg.mechanical_digest(folded, 7, "x")
    files = text.split(dg.FILES_TITLE + "\n")[1].split("\n\n")[0]
    # the earlier digest's files, the later action of src/b.py replacing its "edited"
    assert files.splitlines() == [
        "- read: /repo/src/a.py",
        "- read: README.md",
        "- created: src/b.py",
        "- read: /repo/src/c.py",
    ]
    # its commands, the re-run of pytest at its new status; its error, fixed by that run, is gone
    assert "- [ok] ls -la && cat README.md\n- [failed] git push\n- [exit 0] pytest -q tests" in text
    assert dg.ERRORS_TITLE not in text
    # the user's instructions and the plan are carried verbatim
    assert "- You must never push to main.\n- Don't touch the vendored files." in text
    assert f"{dg.PLAN_TITLE}\n[in_progress] fix the parser\n[pending] run the tests\n\n" in text
    # and its identifiers, read back from their lines, with the later result's version after them
    ids = "- ticket key (user): PROJ-123\n- hex id (tool): 9f3c2ab\n- version (tool): 3.1.4"
    assert text.endswith(f"{dg.IDENTIFIERS_TITLE}\n{ids}")
    # a digest that is not folded is not read (it stays on the surface)
    kept = dg.mechanical_digest([Folded(0, 5, earlier, False, True), *surface(later)], 6, "x")
    assert "README.md" not in kept and "You must never" not in kept
