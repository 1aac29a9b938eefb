"""Identifiers through observation masking (docs/log-format.md, "mask"): a masked result's stub
keeps the first identifiers it held (ids, URLs, versions, keys: what a later step asks for by name
and what a fold loses first), so the ``mask`` strategy keeps the identifier probes of the results
it hides. Before, the stub named only the call, its size and its seq (B12: 23% survived)."""

from __future__ import annotations

import asyncio
import dataclasses

from foldlog import Session, _core
from foldlog.compaction import Compactor, probe_survival
from foldlog.compaction.masking import MASKED_PREFIX
from foldlog.compaction.summary import NoSummary
from foldlog.log.text import message_text
from tests.compaction.test_probes import PAD, SETTINGS, call, result, user

UUID = "123e4567-e89b-12d3-a456-426614174000"


def _session() -> Session:
    s = Session(system="You are a coding agent.")
    s.add(user("Look at the deploy."))
    s.add(call("c1", "Bash", {"command": "git log -1"}))
    s.add(result("c1", f"commit 9f3c2ab41\nAuthor: x\n\n    deploy {UUID} to v2.4.1\n" + PAD))
    s.add(call("c2", "Read", {"file_path": "/repo/deploy.yaml"}))
    s.add(result("c2", "image: registry.example/app\nMAX_RETRIES: 5\n" + PAD))
    s.add({"role": "assistant", "content": "The deploy is pinned."})
    s.add(call("c3", "Read", {"file_path": "/repo/src/page.py"}))
    s.add(result("c3", "def page(): ..."))
    s.add({"role": "assistant", "content": "Done."})
    return s


def test_the_stub_lists_the_ids_it_is_given_after_the_failure() -> None:
    stub = _core.mask_stub("Bash", "{}", 40, 7, None, ["v2.4.1", "9f3c2ab41"])
    assert stub == "[masked: tool result of Bash({}), 40 tokens, seq 7 in the log; ids: v2.4.1, 9f3c2ab41]"
    assert _core.mask_stub("Bash", "{}", 40, 7) == _core.mask_stub("Bash", "{}", 40, 7, None, [])


def test_masking_keeps_every_identifier_probe_of_the_results_it_hides() -> None:
    report = probe_survival(_session(), dataclasses.replace(SETTINGS, strategy="mask"), force=False)
    assert report.folded > 0 and report.saved > 0.5
    ids = {p.answers[0] for p in report.probes if p.category == "identifier"}
    assert {"9f3c2ab41", UUID, "v2.4.1", "MAX_RETRIES"} <= ids
    assert report.lost("identifier") == []


def test_the_stubs_replay_with_their_ids() -> None:
    s = _session()
    chosen = dataclasses.replace(SETTINGS, strategy="mask")
    done = asyncio.run(Compactor(s, NoSummary(chosen.window), chosen).compact("manual", force=False))
    assert done is not None and done.masked == 2
    stubs = [message_text(m) for m in s.derive_messages() if message_text(m).startswith(MASKED_PREFIX)]
    assert stubs[0].endswith(f"; ids: v2.4.1, {UUID}, 9f3c2ab41]")  # the latest mention first
    assert stubs[1].endswith("; ids: MAX_RETRIES]")
    assert list(Session.from_bytes(s.to_bytes()).derive_messages()) == list(s.derive_messages())
