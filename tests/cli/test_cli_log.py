"""``foldlog log …`` and ``foldlog sessions`` driven as a user would (subprocesses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from foldlog.log.session import Session
from tests.cli.cli_testlib import corpus_transcripts, run_cli, source_tool_counts


def _write_v1(
    path: Path, build: list[tuple[str, dict[str, Any], str | dict[str, Any] | None, list[int] | None]]
) -> None:
    s = Session(id=path.stem)
    for type_, data, op, sources in build:
        s.append_event(type_, data, surface_op=op, source_event_seqs=sources)
    s.save(path)


def _complete_turn() -> list[tuple[str, dict[str, Any], str | dict[str, Any] | None, list[int] | None]]:
    call = {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": '{"cmd":"ls"}'}}
    return [
        ("turn/start", {"turn": 1}, None, None),
        ("step/start", {"turn": 1, "step": 1}, None, None),
        ("user/message", {"role": "user", "content": "list files"}, "append", None),
        (
            "assistant/message",
            {"turn": 1, "step": 1, "message": {"role": "assistant", "content": "", "tool_calls": [call]}},
            "append",
            None,
        ),
        (
            "tool/call",
            {"turn": 1, "step": 1, "callId": "call_1", "name": "bash", "arguments": '{"cmd":"ls"}'},
            None,
            None,
        ),
    ]


# --- import: every transcript of the corpus ------------------------------------------------


def test_import_every_corpus_transcript(tmp_path: Path, corpus: Path) -> None:
    jobs = corpus_transcripts(corpus)
    assert len(jobs) > 60
    for index, (fmt, src) in enumerate(jobs):
        expected = source_tool_counts(fmt, src)
        out = tmp_path / f"out-{index}"
        target = f"{out}/" if len(expected) > 1 else str(out / "log.jsonl")
        proc = run_cli("log", "import", "--from", fmt, str(src), "-o", target, "--json", home=tmp_path)
        assert proc.returncode == 0, (src, proc.stderr)
        written = json.loads(proc.stdout)
        written = written if isinstance(written, list) else [written]
        # sub-agent runs are child sessions written beside their parent (the source counts are
        # the parents': a sub-agent's own file is one of the corpus files too)
        top = [w for w in written if w["parent"] is None]
        assert [(w["tool_calls"], w["tool_results"]) for w in top] == expected, src
        for item in written:
            session = Session.load(item["path"])
            added = session.repair_report["events_added"]
            assert len(session.events) - added == item["events"]
            assert item["needs_repair"] == (added > 0)
            types = [ev["type"] for ev in session.events[: item["events"]]]  # as stored
            assert types.count("tool/call") == item["tool_calls"]
            assert types.count("tool/result") == item["tool_results"]


def test_import_then_inspect_counts(tmp_path: Path, corpus: Path) -> None:
    src = corpus / "claude-code-spotter/258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    dst = tmp_path / "cc.jsonl"
    proc = run_cli("log", "import", "--from", "claude-code", str(src), "-o", str(dst), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "186 tool calls, 186 tool results, 1 compactions" in proc.stdout
    report = json.loads(run_cli("log", "inspect", str(dst), "--json", home=tmp_path).stdout)
    assert report["tool_calls"] == 186 and report["compactions"] == 1 and report["turns"] == 4
    assert report["needs_repair"] is False and report["unfinished_compactions"] == 0
    # after the fold the surface holds the digest and what came later, not the whole history
    assert report["surface_messages"] < 6 + 152 + 186
    assert report["messages"]["user"] >= 1
    again = run_cli("log", "import", "--from", "claude-code", str(src), "-o", str(dst), home=tmp_path)
    assert again.returncode == 1 and "exists" in again.stderr


def test_tau_bench_round_trip_through_export(tmp_path: Path, corpus: Path) -> None:
    src = corpus / "tau-bench/gpt-4o-airline.json"
    dst = tmp_path / "t.jsonl"
    proc = run_cli(
        "log", "import", "--from", "openai", str(src), "--index", "3", "-o", str(dst), home=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    exported = json.loads(run_cli("log", "export", "--to", "openai", str(dst), home=tmp_path).stdout)
    original = json.loads(src.read_text(encoding="utf-8"))[3]["traj"]
    assert len(exported) == len(original)
    for got, want in zip(exported, original, strict=True):
        assert got["role"] == want["role"]
        assert (got.get("content") or "") == (want.get("content") or "")
        # this trajectory reuses call ids; the import makes them unique with a "~N" suffix
        assert [c["id"].split("~")[0] for c in got.get("tool_calls") or []] == [
            c["id"] for c in want.get("tool_calls") or []
        ]
        if want["role"] == "tool":
            assert got["tool_call_id"].split("~")[0] == want["tool_call_id"] and got["name"] == want["name"]
    assert any("~" in c["id"] for m in exported for c in m.get("tool_calls") or [])


def test_import_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type":"user","message":{"role":"user","content":"x"}}\nnot json\n')
    proc = run_cli(
        "log", "import", "--from", "claude-code", str(bad), "-o", str(tmp_path / "o.jsonl"), home=tmp_path
    )
    assert proc.returncode == 1
    assert f"{bad}:2" in proc.stderr and "invalid JSON" in proc.stderr
    usage = run_cli("log", "import", "--from", "no-such-format", str(bad), home=tmp_path)
    assert usage.returncode == 2 and "invalid choice" in usage.stderr
    missing = run_cli("log", "import", "--from", "codex", str(tmp_path / "nope.jsonl"), home=tmp_path)
    assert missing.returncode == 1 and "no such file" in missing.stderr


# --- show / inspect / repair on the seed example and on damaged logs -----------------------


@pytest.fixture()
def seed_log(tmp_path: Path, seed_v0_lines: list[str]) -> Path:
    path = tmp_path / "seed-example.jsonl"
    path.write_text("\n".join(seed_v0_lines) + "\n", encoding="utf-8")
    return path


def test_show_and_inspect_seed_example(tmp_path: Path, seed_log: Path) -> None:
    shown = run_cli("log", "show", str(seed_log), home=tmp_path)
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert out.index("── user") < out.index("Fix the typo in the example README.") < out.index("── assistant")
    assert "I'll search" in out and "→ bash" in out and "grep example README.md" in out
    assert "── tool bash" in out and "example" in out.split("── tool bash", 1)[1]
    report = json.loads(run_cli("log", "inspect", str(seed_log), "--json", home=tmp_path).stdout)
    assert report["events"] == 10 and report["turns"] == 1 and report["steps"] == 1
    assert report["messages"] == {"assistant": 1, "tool": 1, "user": 1}
    assert report["surface_messages"] == 3 and report["tool_calls"] == 1 and report["compactions"] == 0
    assert isinstance(report["needs_repair"], bool)
    events = run_cli("log", "show", "--events", str(seed_log), home=tmp_path).stdout
    assert "assistant/chunk" in events and "turn/end" in events


def test_repair_open_turn_appends_and_keeps_history(tmp_path: Path) -> None:
    path = tmp_path / "crashed.jsonl"
    _write_v1(path, _complete_turn())  # a turn cut off after the tool call: no result, no end
    before = path.read_bytes()
    report = json.loads(run_cli("log", "inspect", str(path), "--json", home=tmp_path).stdout)
    assert report["needs_repair"] is True
    proc = run_cli("log", "repair", str(path), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "appended" in proc.stdout and "tool/result" in proc.stdout and "turn/end" in proc.stdout
    assert path.read_bytes().startswith(before)  # history is never rewritten in place
    events = Session.load(path).events
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"]["kind"] == "interrupted"
    after = json.loads(run_cli("log", "inspect", str(path), "--json", home=tmp_path).stdout)
    assert after["needs_repair"] is False and after["events"] > report["events"]
    again = run_cli("log", "repair", str(path), home=tmp_path)
    assert again.returncode == 0 and "nothing to repair" in again.stdout


def test_damaged_logs(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    _write_v1(good, _complete_turn()[:3])
    lines = good.read_text(encoding="utf-8").splitlines()

    torn = tmp_path / "torn.jsonl"
    torn.write_text("\n".join(lines) + '\n{"type":"step/end","seq":3,"ti')
    proc = run_cli("log", "show", str(torn), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "list files" in proc.stdout

    corrupt = tmp_path / "corrupt.jsonl"
    corrupt.write_text("\n".join([*lines[:2], "{garbage", *lines[2:]]) + "\n")
    proc = run_cli("log", "inspect", str(corrupt), home=tmp_path)
    assert proc.returncode == 1
    assert "corrupt.jsonl" in proc.stderr and "3" in proc.stderr

    newer = tmp_path / "newer.jsonl"
    seq = len(lines) - 1
    newer.write_text(
        "\n".join([*lines, json.dumps({"type": "quantum/leap", "seq": seq, "time": 1, "data": {}})])
    )
    proc = run_cli("log", "show", str(newer), home=tmp_path)
    assert proc.returncode == 1 and "newer" in proc.stderr

    proc = run_cli("log", "show", str(tmp_path / "absent.jsonl"), home=tmp_path)
    assert proc.returncode == 1 and "no session log" in proc.stderr


# --- sessions and configuration ------------------------------------------------------------


def test_sessions_newest_first_and_config_precedence(tmp_path: Path, seed_log: Path, corpus: Path) -> None:
    home = tmp_path / "home"
    first = run_cli("log", "import", "--from", "dsh", str(seed_log), home=home)
    assert first.returncode == 0, first.stderr
    src = corpus / "claude-code-spotter/short.jsonl"
    second = run_cli("log", "import", "--from", "claude-code", str(src), home=home)
    assert second.returncode == 0, second.stderr
    listing = json.loads(run_cli("sessions", "--json", home=home).stdout)
    assert listing["sessions_dir"] == str(home / "sessions")
    ids = [s["id"] for s in listing["sessions"]]
    assert len(ids) == 2 and ids[0] != "seed-example"  # the later import is listed first
    seed = listing["sessions"][1]
    assert seed["turns"] == 1 and seed["preview"] == "Fix the typo in the example README."
    table = run_cli("sessions", home=home).stdout
    assert "Fix the typo" in table and "seed-example" in table

    # show/inspect/export accept an id from the sessions folder
    assert run_cli("log", "inspect", "seed-example", home=home).returncode == 0

    # a project foldlog.toml is used; FOLDLOG_HOME beats it; --home beats both
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "foldlog.toml").write_text('sessions_dir = "here"\n')
    from_file = json.loads(
        run_cli("sessions", "--json", home=home, cwd=project / "sub", set_home=False).stdout
    )
    assert from_file["sessions_dir"] == str((project / "here").resolve())
    default = json.loads(run_cli("sessions", "--json", home=home, set_home=False).stdout)
    assert default["sessions_dir"] == str(home / "state" / "foldlog" / "sessions")
    env_listing = json.loads(run_cli("sessions", "--json", home=home, cwd=project / "sub").stdout)
    assert env_listing["sessions_dir"] == str(home / "sessions")  # FOLDLOG_HOME wins over the file's home
    flag = json.loads(run_cli("--home", str(tmp_path / "h2"), "sessions", "--json", home=home).stdout)
    assert flag["sessions_dir"] == str(tmp_path / "h2" / "sessions")
    (home / "config" / "foldlog").mkdir(parents=True)
    (home / "config" / "foldlog" / "foldlog.toml").write_text('provider = "deepseek"\nbogus = 1\n')
    bad = run_cli("sessions", home=home)
    assert bad.returncode == 1 and "unknown key" in bad.stderr and "bogus" in bad.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert run_cli(home=tmp_path).returncode == 2
    assert run_cli("log", home=tmp_path).returncode == 2
    assert run_cli("run", "x", "--max-steps", "many", home=tmp_path).returncode == 2
