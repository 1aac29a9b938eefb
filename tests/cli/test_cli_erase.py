"""``foldlog log erase SESSION --seq N [--seq M …] --reason TEXT`` — run as a user would."""

from __future__ import annotations

import json
from pathlib import Path

from foldlog import Session
from foldlog.log.erasure import ERASED
from foldlog.log.forks import fork_session
from tests.cli.cli_testlib import run_cli

SECRET = "SECRET-cli-erase-9d2e"


def _sessions(home: Path) -> Path:
    """``home/sessions`` with ``main`` (its seq 1 holds the secret), a fork that reads main's log
    and a fork that holds its own copy of main's events."""
    folder = home / "sessions"
    s = Session.open(folder, "main", system="sys")
    s.add({"role": "user", "content": f"my id is {SECRET}"})
    s.add({"role": "assistant", "content": "noted"})
    s.flush()
    fork_session(s, 2, session_id="reads").close()
    copy = Session.from_bytes(s.to_bytes())
    fork_session(copy, 2, folder / "copied.jsonl", session_id="copied").close()
    s.close()
    return folder


def test_erase_from_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = _sessions(home)
    proc = run_cli("log", "erase", "main", "--seq", "1", "--reason", "request 3", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    done = json.loads(proc.stdout)
    assert (done["erased"], done["erasure_seq"], done["reason"]) == ([1], 3, "request 3")
    # the fork made by copying still holds the content: listed, with the command that erases it
    assert done["forks_holding"] == [{"id": "copied", "seqs": [1]}]
    assert SECRET.encode() not in (folder / "main.jsonl").read_bytes()
    assert [m["content"] for m in Session.load(folder / "reads.jsonl").derive_messages()][1] == ERASED
    text = run_cli("log", "erase", "copied", "--seq", "1", "--reason", "request 3", home=home)
    assert text.returncode == 0, text.stderr
    assert "erased event(s) #1; recorded as event #3 (request 3)" in text.stdout
    assert SECRET.encode() not in (folder / "copied.jsonl").read_bytes()
    shown = run_cli("log", "show", "main", home=home)
    assert ERASED in shown.stdout and SECRET not in shown.stdout


def test_the_cli_names_what_cannot_be_erased(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = _sessions(home)
    before = (folder / "main.jsonl").read_bytes()
    unknown = run_cli("log", "erase", "main", "--seq", "7", "--reason", "r", home=home)
    assert unknown.returncode != 0 and "no event #7 to erase (events 0..2)" in unknown.stderr
    parents = run_cli("log", "erase", "reads", "--seq", "1", "--reason", "r", home=home)
    assert parents.returncode != 0 and "event #1 is in the log of session main" in parents.stderr
    no_reason = run_cli("log", "erase", "main", "--seq", "1", home=home)
    assert no_reason.returncode != 0 and "--reason" in no_reason.stderr
    assert (folder / "main.jsonl").read_bytes() == before


def test_the_text_output_lists_the_forks_holding_copies(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _sessions(home)
    proc = run_cli("log", "erase", "main", "--seq", "1", "--reason", "request 4", home=home)
    assert proc.returncode == 0, proc.stderr
    assert "fork copied holds its own copy of them: foldlog log erase copied --seq 1" in proc.stdout


def test_the_cli_reports_the_media_it_removed(tmp_path: Path) -> None:
    import base64
    import os

    home = tmp_path / "home"
    folder = home / "sessions"
    image = b"\x89PNG\r\n\x1a\n" + os.urandom(600)
    url = "data:image/png;base64," + base64.b64encode(image).decode()
    with Session.open(folder, "pics", system="sys") as s:
        for text in ("one", "two"):
            block = {"type": "image_url", "image_url": {"url": url}}
            s.add({"role": "user", "content": [{"type": "text", "text": text}, block]})
    proc = run_cli("log", "erase", "pics", "--seq", "1", "--reason", "r", "--json", home=home)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["media_removed"] == 0, "event #2 still references it"
    last = run_cli("log", "erase", "pics", "--seq", "2", "--reason", "r", home=home)
    assert last.returncode == 0, last.stderr
    assert "removed 1 media file(s) no other event references" in last.stdout
    assert [p.name for p in (folder / "media").iterdir()] == []
