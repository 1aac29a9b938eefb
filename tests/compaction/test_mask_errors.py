"""Error survival of the ``mask`` and ``hybrid`` strategies (docs/compaction-benchmark.md,
``error``; docs/log-format.md, "mask"): a masked failed result's stub keeps its first line, and a
long failing command's answer is cut at a whole word, so the call left on the surface still
answers it. Both were lost before (B12: mask 80%, hybrid 90% error survival)."""

from __future__ import annotations

import asyncio
import dataclasses

from foldlog import Session, _core
from foldlog.compaction import Compactor, probe_survival
from foldlog.compaction.facts import error_answer, error_line, is_error_result
from foldlog.compaction.masking import MASKED_PREFIX
from foldlog.compaction.summary import NoSummary
from foldlog.compaction.survival import present, surface_text
from foldlog.log.text import message_text
from tests.compaction.test_probes import PAD, SETTINGS, call, result, user

#: a failing command over 200 characters: its answer is a cut of it
LONG_COMMAND = (
    'git commit -m "feat: unified transcript visualization and debug parity (spotter-dov) '
    "Extract the shared transcript rendering into one module so the live view and the debug page "
    'agree on every block they show"'
)


def _session() -> Session:
    s = Session(system="You are a coding agent.")
    s.add(user("Ship the transcript view."))
    s.add(call("c1", "Bash", {"command": LONG_COMMAND}))
    failed = "Pre-commit validation failed:\n[FORMAT] Code is not formatted.\n"
    s.add(result("c1", failed + PAD, is_error=True))
    # a tool with neither a command nor a file: its answer is the error's first line; "Exit code"
    # alone marks it failed (no is_error flag, and not an `error:` prefix the planner keeps)
    s.add(call("c2", "run_checks", {"suite": "integration"}))
    s.add(result("c2", "Exit code 3\nintegration suite aborted: database unreachable\n" + PAD))
    s.add(call("c3", "Read", {"file_path": "/repo/src/view.py"}))
    s.add(result("c3", "def view(): ...\n" + PAD))
    s.add({"role": "assistant", "content": "The checks fail; I will look again."})
    s.add(call("c4", "Read", {"file_path": "/repo/src/page.py"}))
    s.add(result("c4", "def page(): ..."))
    s.add({"role": "assistant", "content": "Done."})
    return s


def test_a_long_commands_answer_ends_on_a_whole_word_found_in_the_command() -> None:
    answer = error_answer("Bash", {"command": LONG_COMMAND}, result("c1", "Exit code 1"))
    assert len(LONG_COMMAND) > 200 and len(answer) <= 120
    assert LONG_COMMAND[119:121].isalpha()  # its first 120 characters end inside a word
    assert LONG_COMMAND.startswith(answer) and LONG_COMMAND[len(answer)] == " "
    # the call on the surface answers it (a cut inside a word would not be a whole token)
    assert present(answer, surface_text([call("c1", "Bash", {"command": LONG_COMMAND})]))
    assert not present(answer[:-2], surface_text([call("c1", "Bash", {"command": LONG_COMMAND})]))
    # a command with no space in its first 120 characters is cut there
    blob = "x" * 250
    assert error_answer("Bash", {"command": blob}, result("c1", "")) == "x" * 120


def test_a_masked_failed_result_keeps_its_first_line() -> None:
    failed = result("c2", "<tool_use_error>Exit code 3\nmore</tool_use_error>")
    assert is_error_result(failed) and error_line(failed) == "Exit code 3"
    stub = _core.mask_stub("run_checks", "{}", 40, 7, error_line(failed))
    assert stub == (
        "[masked: tool result of run_checks({}), 40 tokens, seq 7 in the log; it failed: Exit code 3]"
    )
    assert _core.mask_stub("run_checks", "{}", 40, 7) == _core.mask_stub("run_checks", "{}", 40, 7, None)


def test_mask_and_hybrid_keep_every_error_probe() -> None:
    for strategy in ("mask", "hybrid"):
        report = probe_survival(_session(), dataclasses.replace(SETTINGS, strategy=strategy), force=False)
        assert report.folded > 0 and report.saved > 0.5, strategy
        errors = [p for p in report.probes if p.category == "error"]
        assert [p.answers for p in errors] == [
            (error_answer("Bash", {"command": LONG_COMMAND}, {}),),
            ("Exit code 3",),
        ], strategy
        assert report.lost("error") == [], strategy


def test_the_stubs_say_how_a_failed_result_failed_and_replay() -> None:
    s = _session()
    chosen = dataclasses.replace(SETTINGS, strategy="mask")
    done = asyncio.run(Compactor(s, NoSummary(chosen.window), chosen).compact("manual", force=False))
    assert done is not None and done.masked == 3
    stubs = [message_text(m) for m in s.derive_messages() if message_text(m).startswith(MASKED_PREFIX)]
    assert [t.rsplit("in the log", 1)[1] for t in stubs] == [
        "; it failed: Pre-commit validation failed:]",
        "; it failed: Exit code 3]",
        "]",  # the read did not fail
    ]
    assert list(Session.from_bytes(s.to_bytes()).derive_messages()) == list(s.derive_messages())
