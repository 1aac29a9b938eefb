"""Probes and tier 0 survival (docs/compaction-benchmark.md): the generation rules on small
hand-built surfaces, a fold of a hand-built session end to end, the compact-eval columns, and
every Claude Code / Codex transcript of the shared corpus folded mechanically at ≥ 50% saved."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from foldlog import Session
from foldlog.batch import read_table, run_batch
from foldlog.compaction import Compactor, Probe, probe_survival
from foldlog.compaction.probes import SCORED, Folded, generate, probes_for_plan
from foldlog.compaction.settings import CompactionSettings
from foldlog.compaction.summary import NoSummary
from foldlog.compaction.survival import present, score
from foldlog.errors import ConfigError
from tests.compaction.corpus_histories import corpus_dir
from tests.compaction.probe_corpus import corpus_reports

Message = dict[str, Any]


def call(cid: str, name: str, args: Mapping[str, Any] | str) -> Message:
    raw = args if isinstance(args, str) else json.dumps(args)
    return {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": raw}}],
    }


def result(cid: str, content: str, **extra: Any) -> Message:
    return {"role": "tool", "tool_call_id": cid, "content": content, **extra}


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def surface(
    messages: Sequence[Message], folded: Sequence[bool] | None = None, digests: Sequence[int] = ()
) -> list[Folded]:
    """Messages at seqs 10, 20, …, folded unless ``folded`` says otherwise."""
    flags = folded if folded is not None else [True] * len(messages)
    return [Folded(i, 10 * (i + 1), m, flags[i], i in digests) for i, m in enumerate(messages)]


def of(probes: Sequence[Probe], category: str) -> list[Probe]:
    return [p for p in probes if p.category == category]


# --- the rules --------------------------------------------------------------------------------


def test_artifacts_from_arguments_patch_headers_and_plain_shell_operands() -> None:
    patch = (
        "*** Begin Patch\n*** Update File: src/a.rs\n*** Add File: docs/new.md\n"
        "*** Delete File: old.txt\n*** End Patch"
    )
    git_diff = "diff --git a/lib/x.py b/lib/x.py\n--- a/lib/x.py\n+++ b/lib/x.py\n@@\n-a\n+b\n"
    probes = generate(
        surface(
            [
                call("1", "Read", {"file_path": "/repo/src/main.py"}),
                call("2", "Edit", {"file_path": ".\\pkg\\util.py", "old_string": "a", "new_string": "b"}),
                call("3", "str_replace_editor", {"command": "create", "path": "/testbed/setup.cfg"}),
                call("4", "apply_patch", patch),  # a custom tool: the raw patch text
                call(
                    "5", "Bash", {"command": "cat README.md && sed -n 1,20p src/lib.rs | head -5 > out.txt"}
                ),
                call("6", "exec_command", {"cmd": ["bash", "-lc", "rm -f build/tmp.o"]}),
                call("7", "Grep", {"pattern": "foo", "path": "src"}),  # a search scope, not a file
                call("8", "Bash", {"command": "git apply <<'EOF'\n" + git_diff + "EOF"}),
                call("9", "Bash", {"command": "ls -la && echo $HOME > /dev/null && python -c 'x'"}),
                call("10", "NotebookEdit", {"notebook_path": "nb/analysis.ipynb", "new_source": "x"}),
                call("11", "Bash", {"command": "wc -l notes.txt; touch 'new file.md'"}),
                call("12", "Bash", {"command": "python - <<'EOF'\ncat inside_heredoc.txt\nEOF"}),
                call("13", "Bash", {"command": "cat 'unbalanced.txt"}),  # shlex cannot split it
            ]
        )
    )
    found = {p.answers[0]: p for p in of(probes, "artifact")}
    assert set(found) == {
        "/repo/src/main.py",
        "pkg/util.py",
        "/testbed/setup.cfg",
        "src/a.rs",
        "docs/new.md",
        "old.txt",
        "README.md",
        "src/lib.rs",
        "out.txt",
        "build/tmp.o",
        "lib/x.py",
        "nb/analysis.ipynb",
        "notes.txt",
        "new file.md",
    }
    assert found["/repo/src/main.py"].answers == ("/repo/src/main.py", "src/main.py")
    assert found["README.md"].answers == ("README.md",)
    assert "was read with the Read tool" in found["/repo/src/main.py"].question
    assert (
        "was edited" in found["pkg/util.py"].question
        and "was created" in found["/testbed/setup.cfg"].question
    )
    assert "was created" in found["docs/new.md"].question and "was deleted" in found["old.txt"].question
    assert "was deleted" in found["build/tmp.o"].question and "was written" in found["out.txt"].question
    assert found["src/a.rs"].seq == 40 and found["lib/x.py"].seq == 80


def test_artifacts_from_other_agents_argument_names() -> None:
    """Gemini CLI (``absolute_path``, ``paths``, ``replace``), OpenCode (``filePath``) and
    Cursor-style tools (``create_file``, ``delete_file``) name their files too."""
    probes = generate(
        surface(
            [
                call("1", "read_file", {"absolute_path": "/w/app/main.go"}),
                call("2", "read_many_files", {"paths": ["/w/app/a.go", "/w/app/b.go"]}),
                call("3", "replace", {"file_path": "/w/app/c.go", "old_string": "a", "new_string": "b"}),
                call("4", "edit", {"filePath": "/w/web/index.ts", "oldString": "a", "newString": "b"}),
                call("5", "create_file", {"target_file": "docs/guide.md", "content": "x"}),
                call("6", "delete_file", {"target_file": "tmp/old.log"}),
            ]
        )
    )
    found = {p.answers[0]: p.question for p in of(probes, "artifact")}
    assert set(found) == {
        "/w/app/main.go",
        "/w/app/a.go",
        "/w/app/b.go",
        "/w/app/c.go",
        "/w/web/index.ts",
        "docs/guide.md",
        "tmp/old.log",
    }
    assert "was read" in found["/w/app/a.go"] and "was edited" in found["/w/app/c.go"]
    assert "was created" in found["docs/guide.md"] and "was deleted" in found["tmp/old.log"]


def test_one_artifact_probe_per_file_evidenced_by_its_latest_folded_call() -> None:
    probes = generate(
        surface(
            [
                call("1", "Read", {"file_path": "src/a.py"}),
                call("2", "Edit", {"file_path": "SRC/A.py", "old_string": "x", "new_string": "y"}),
            ]
        )
    )
    [probe] = of(probes, "artifact")
    assert probe.seq == 20 and "edited" in probe.question


def test_evidence_left_on_the_surface_makes_no_probe() -> None:
    messages = [
        call("1", "Read", {"file_path": "src/a.py"}),
        result("1", "error: permission denied"),
        user("You must keep the public API stable, see issue #42."),
        call("2", "TodoWrite", {"todos": [{"content": "fix it", "status": "pending"}]}),
    ]
    assert generate(surface(messages, [False] * 4)) == []
    assert {p.category for p in generate(surface(messages))} == {
        "artifact",
        "error",
        "constraint",
        "identifier",
        "decision",
    }


def test_an_error_fixed_later_in_the_session_makes_no_probe() -> None:
    messages = [
        call("1", "Bash", {"command": "make  test"}),
        result("1", "Exit code 2\nFAILED tests/test_x.py"),
        call("2", "Bash", {"command": "make lint"}),
        result("2", "error: ruff found 3 problems"),
        call("3", "Read", {"file_path": "/repo/missing.py"}),
        result("3", "<tool_use_error>File does not exist.</tool_use_error>", is_error=True),
        call("4", "Bash", {"command": "make lint"}),
        result("4", "Process exited with code 1"),  # failed again: still not fixed
        call("5", "Bash", {"command": "make test"}),  # the same command, whitespace aside: fixed
        result("5", "12 passed"),
        call("6", "Bash", {"command": "true"}),
        result("6", "Exit code 0"),  # not a failure
    ]
    # the fix is on the surface (not folded): it still counts
    errors = of(generate(surface(messages, [True] * 8 + [False] * 4)), "error")
    assert [(p.answers, p.seq) for p in errors] == [(("/repo/missing.py",), 60), (("make lint",), 80)]
    assert "Read call failed" in errors[0].question


def test_an_error_without_a_command_or_file_is_answered_by_its_first_line() -> None:
    messages = [call("1", "fetch", {"n": 1}), result("1", "error: page 1 is gone\nmore")]
    [probe] = of(generate(surface(messages)), "error")
    assert probe.answers == ("error: page 1 is gone",)


def test_constraints_are_the_users_instructing_sentences_verbatim() -> None:
    digest = user("<compaction-summary>You must always do X.</compaction-summary>")
    text = (
        "Please fix the login bug. You must not   touch the public API!\n"
        "- Always run the tests before committing\n"
        "<system-reminder>You must obey the reminder.</system-reminder> Ok?\n"
        "Never."  # under 3 words
    )
    probes = of(
        generate(surface([digest, user(text), call("1", "x", {"only": "a"})], digests=[0])), "constraint"
    )
    assert [p.answers for p in probes] == [
        ("You must not touch the public API!",),
        ("Always run the tests before committing",),
    ]
    assert all(p.seq == 20 for p in probes)


def test_identifiers_in_user_turns_and_tool_results() -> None:
    messages = [
        user(
            "See issue #42 and commit 3f2a9c1d, run 123e4567-e89b-12d3-a456-426614174000 on v1.2.3; "
            "JIRA-77 sets MAX_RETRIES. Not ids: 1234567, abcdefab, [REDACTED_TEXT len=3 sha=ab12cd34]"
        ),
        call("1", "fetch", {"url": "https://example.com/not-from-a-call"}),
        result("1", "see https://example.com/docs/x. Then #42 again"),
    ]
    probes = of(generate(surface(messages)), "identifier")
    assert {p.answers[0]: p.seq for p in probes} == {
        "3f2a9c1d": 10,
        "123e4567-e89b-12d3-a456-426614174000": 10,
        "v1.2.3": 10,
        "JIRA-77": 10,
        "MAX_RETRIES": 10,
        "https://example.com/docs/x": 30,
        "#42": 30,  # the latest evidence
    }


def test_the_decision_probe_is_the_latest_plan_and_only_when_it_is_folded() -> None:
    todo = call("1", "TodoWrite", {"todos": [{"content": "write tests", "status": "completed"}]})
    plan = call("2", "update_plan", {"plan": [{"step": "ship", "status": "in_progress"}]})
    [probe] = of(generate(surface([todo, plan])), "decision")
    assert probe.answers == ("[in_progress] ship",) and probe.seq == 20
    assert of(generate(surface([todo, plan], [True, False])), "decision") == []  # superseded on the surface


def test_the_cap_keeps_the_latest_evidence_and_generation_is_deterministic() -> None:
    messages = [call(str(i), "Read", {"file_path": f"src/m{i}.py"}) for i in range(60)]
    probes = generate(surface(messages), cap=50)
    arts = of(probes, "artifact")
    assert len(arts) == 50 and arts[0].answers[0] == "src/m10.py" and arts[-1].answers[0] == "src/m59.py"
    assert generate(surface(messages), cap=50) == probes
    with pytest.raises(ConfigError, match="cap"):
        generate(surface(messages), cap=0)


def test_survival_matching_rules() -> None:
    hay = score(
        [Probe("artifact", "q", ("/home/u/repo/src/app.py", "src/app.py"), 1)],
        [{"role": "assistant", "content": "Edited .\\SRC\\App.py and data.py"}],
    )
    assert hay == (True,)
    from foldlog.compaction.survival import surface_text

    text = surface_text(
        [
            {"role": "user", "content": "You  must\nNOT touch it. See #123 and v1.2.30"},
            call("1", "Write", {"file_path": "lib/a.py"}),
        ]
    )
    assert present("you must not touch it.", text)
    assert not present("#12", text) and not present("1.2.3", text)
    assert present("lib/a.py", text) and not present("a.py", "see data.py")
    assert present("./lib/A.py", text)
    assert score([Probe("decision", "q", ("x",), 1)], []) == (None,)
    # a bare basename is not enough: the parent directory must be named with it
    assert score(
        [Probe("artifact", "q", ("/r/src/gamma.py", "src/gamma.py"), 1)], [user("see gamma.py")]
    ) == (False,)


# --- a fold end to end ------------------------------------------------------------------------

PAD = " ".join(f"word{i}" for i in range(400))  # about 800 estimated tokens


def _session() -> Session:
    s = Session(system="You are a coding agent.")
    s.add(user("Fix the parser."))
    s.add(call("c1", "Read", {"file_path": "/repo/src/alpha.py"}))
    s.add(result("c1", "def alpha(): ...\n" + PAD))
    s.add(user("You must never push to main. Ticket PROJ-12 tracks it. " + PAD))
    s.add(call("c2", "Bash", {"command": "pytest tests/test_alpha.py"}))
    s.add(result("c2", "error: 1 failed (run 123e4567-e89b-12d3-a456-426614174000)\n" + PAD))
    s.add(call("c3", "Edit", {"file_path": "/repo/src/gamma.py", "old_string": "a", "new_string": "b"}))
    s.add(result("c3", "ok " + PAD))
    s.add({"role": "assistant", "content": "Next I will look at src/gamma.py again and then beta."})
    s.add(call("c4", "Read", {"file_path": "/repo/src/beta.py"}))
    s.add(result("c4", "def beta(): ..."))
    s.add({"role": "assistant", "content": "Done."})
    return s


SETTINGS = CompactionSettings(window=4_000, tail_tokens=120, pinned_user_turn_tokens=50, keep_policy="none")


def test_probe_survival_folds_a_copy_and_scores_what_the_surface_keeps() -> None:
    s = _session()
    events = len(s.events)
    report = probe_survival(s, SETTINGS)
    assert len(s.events) == events  # the caller's session is not folded
    assert report.folded > 0 and report.saved > 0.5
    answers = {
        p.category: [a for q in report.probes if q.category == p.category for a in q.answers]
        for p in report.probes
    }
    # beta.py is read in the tail: its evidence stays on the surface, no probe
    assert answers["artifact"] == ["/repo/src/alpha.py", "src/alpha.py", "/repo/src/gamma.py", "src/gamma.py"]
    assert answers["error"] == ["pytest tests/test_alpha.py"]
    assert answers["constraint"] == ["You must never push to main."]
    assert set(answers["identifier"]) == {"PROJ-12", "123e4567-e89b-12d3-a456-426614174000"}
    # the mechanical fold's structured digest names the files, the failing command, the
    # instruction and the identifiers (the ticket key under "Identifiers seen")
    assert [p.answers[0] for p, ok in zip(report.probes, report.survived, strict=True) if not ok] == []
    assert report.columns() == {
        "probes_artifact": 2,
        "survived_artifact": 2,
        "probes_error": 1,
        "survived_error": 1,
        "probes_constraint": 1,
        "survived_constraint": 1,
        "probes_identifier": 2,
        "survived_identifier": 2,
    }
    assert report.share("artifact") == 1.0 and report.share("decision") is None
    assert probe_survival(s, SETTINGS) == report  # deterministic
    with pytest.raises(ConfigError, match=r"settings\.window"):
        probe_survival(s, CompactionSettings())


def test_no_fold_no_probes() -> None:
    report = probe_survival(_session(), CompactionSettings(window=1_000_000, tail_tokens=1_000_000))
    assert report.folded == 0 and report.probes == () and report.columns()["probes_artifact"] == 0


def test_compact_eval_with_probes_adds_the_columns(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    _session().save(log)
    from foldlog.batch import GridPoint

    point = GridPoint(4_000, 120, "none")
    out = tmp_path / "r.csv"
    report = run_batch("compact-eval", [str(log)], out=out, engine="serial", points=[point], probes=True)
    [row] = read_table(out)
    assert not row["error"] and int(row["folded"]) > 0
    columns = {f"{k}_{c}" for c in SCORED for k in ("probes", "survived")}
    assert columns <= set(row)
    assert int(row["probes_artifact"]) == 2 and int(row["survived_artifact"]) == 2
    [p] = report.summary["points"]
    assert p["probes_artifact"] == 2 and p["survival_artifact_pct"] == 100.0
    from foldlog.batch.summary import table_text

    assert "artifact 2/2 (100%)" in table_text(report.summary)
    plain = run_batch("compact-eval", [str(log)], out=tmp_path / "p.csv", engine="serial", points=[point])
    assert "probes_artifact" not in plain.rows[0]
    with pytest.raises(ConfigError, match="--probes"):
        run_batch("stats", [str(log)], out=tmp_path / "st.csv", engine="serial", probes=True)


# --- the corpus -------------------------------------------------------------------------------


@pytest.mark.skipif(not corpus_dir().is_dir(), reason="../shared/corpus is not available")
def test_probes_and_survival_over_every_claude_code_and_codex_transcript() -> None:
    totals: Counter[str] = Counter()
    for name, s, settings, report in corpus_reports(0.5):
        totals["sessions"] += 1
        totals.update(report.columns())
        assert report.saved >= 0.5
        # the probes are those of the plan the fold followed, and no probe's evidence is on
        # the surface after the fold
        copy = Session.from_bytes(s.to_bytes())
        copy.model = s.model
        preview = Compactor(copy, NoSummary(settings.window), settings).plan(force=True)
        assert probes_for_plan(copy, preview) == list(report.probes), name
        fold = set(preview.plan.fold)
        kept = {seq for i, seq in enumerate(preview.seqs) if i not in fold}
        assert not any(p.seq in kept for p in report.probes), name
        assert all(s is None or isinstance(s, bool) for s in report.survived)
    assert totals["sessions"] >= 15
    assert totals["probes_artifact"] >= 100 and totals["probes_identifier"] >= 100
    assert totals["probes_error"] >= 5 and totals["probes_constraint"] >= 1
    # the goals of issue #28 for tier 0, reached by the mechanical fold's structured digest
    # (docs/compaction-benchmark.md has the figures): artifact >= 95%, error and constraint 100%
    assert totals["survived_artifact"] >= 0.95 * totals["probes_artifact"]
    assert totals["survived_error"] == totals["probes_error"]
    assert totals["survived_constraint"] == totals["probes_constraint"]


def test_the_cli_flag(tmp_path: Path) -> None:
    from tests.cli.cli_testlib import run_cli

    log = tmp_path / "s.jsonl"
    _session().save(log)
    out = tmp_path / "r.csv"
    argv = ["--windows", "4000", "--tails", "120", "--keep", "none", "--engine", "serial", "-o", str(out)]
    done = run_cli("batch", "compact-eval", str(log), "--probes", *argv, home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "artifact 2/2 (100%)" in done.stdout and "an upper bound, not recall" in done.stdout
    assert int(read_table(out)[0]["survived_artifact"]) == 2
    bad = run_cli("batch", "stats", str(log), "--probes", "-o", str(tmp_path / "t.csv"), home=tmp_path)
    assert bad.returncode == 2 and "--probes" in bad.stderr and "Traceback" not in bad.stderr
