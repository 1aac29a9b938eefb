"""The B1 baseline (`benches/pyload.py`) and the bench workloads: the Python re-implementation
derives exactly what foldlog derives from logs recorded from the real corpus, and a broken log
is refused by both."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benches"))

import pyload
import workloads
from foldlog import Session

if not (workloads.corpus_dir() / "tau-bench").is_dir():  # pragma: no cover
    pytest.skip("the shared corpus is not available", allow_module_level=True)


def _dumps(v: object) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    convs = workloads.corpus_conversations()
    picked = convs[:5] + [c for c in convs if any(m.get("tool_calls") for m in c)][-2:]
    s = Session(id="bench-test")
    rec = workloads.Recorder(s)
    rec.record({"role": "system", "content": "sys"}, "")
    for rep in range(2):
        for conv in picked:
            for m in conv:
                if m["role"] != "system":
                    rec.record(m, f"~{rep}")
            rec.end_turn()
    path = tmp_path_factory.mktemp("bench") / "log.jsonl"
    s.save(path)
    return path


def test_recording_has_the_full_lifecycle(recorded: Path) -> None:
    kinds = {json.loads(line)["type"] for line in recorded.read_text().splitlines()[1:]}
    assert {
        "turn/start",
        "step/start",
        "user/message",
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "turn/end",
    } <= kinds


def test_baseline_derives_what_foldlog_derives(recorded: Path) -> None:
    ours = [dict(m) for m in Session.load(recorded).derive_messages()]
    theirs, repairs = pyload.load(str(recorded), json.loads, _dumps)
    assert repairs == 0
    assert json.loads(json.dumps(ours)) == theirs
    assert any(m.get("tool_calls") for m in theirs) and any(m["role"] == "tool" for m in theirs)


def test_baseline_refuses_a_seq_gap(recorded: Path, tmp_path: Path) -> None:
    lines = recorded.read_text().splitlines()
    broken = tmp_path / "gap.jsonl"
    broken.write_text("\n".join(lines[:5] + lines[6:]) + "\n")
    with pytest.raises(pyload.LoadError, match="continuity"):
        pyload.load(str(broken), json.loads, _dumps)
