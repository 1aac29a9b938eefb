"""Token counts cached per event in the log: counted once, kept with the event, never recounted."""

from __future__ import annotations

import json
from pathlib import Path

from foldlog import Session, Tokenizer

MODEL = "deepseek-v4-flash"


def test_counts_are_written_with_flushed_events(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    with Session.open(p) as s:
        s.model = MODEL
        s.add({"role": "system", "content": "be brief"})
        s.flush()
        s.add({"role": "user", "content": "count me, please"})
        total = s.token_count(MODEL)
    tok = Tokenizer.for_model(MODEL)
    expected = sum(tok.count_message(m) for m in Session.load(p).derive_messages()) + tok.request_overhead()
    assert total == expected
    events = [json.loads(line) for line in p.read_text().splitlines()[1:]]
    assert all(e["tokens"]["deepseek-v4"] > 0 for e in events)


def test_resuming_uses_the_cached_counts_and_recounts_nothing(tmp_path: Path) -> None:
    p = tmp_path / "t.jsonl"
    s = Session(system="sys")
    s.add({"role": "user", "content": "hello"})
    s.save(p)
    # plant a count no tokenizer would produce: if the cache is used, the total shows it
    lines = p.read_text().splitlines()
    ev = json.loads(lines[2])
    ev["tokens"] = {"deepseek-v4": 1000}
    lines[2] = json.dumps(ev, separators=(",", ":"))
    p.write_text("\n".join(lines) + "\n")
    loaded = Session.load(p)
    tok = Tokenizer.for_model(MODEL)
    sys_count = tok.count_message({"role": "system", "content": "sys"})
    assert loaded.token_count(MODEL) == sys_count + 1000 + tok.request_overhead()
    # a different tokenizer counts for itself
    o200k = Tokenizer.for_model("gpt-4o")
    assert loaded.token_count("gpt-4o") == o200k.count_request(loaded.derive_messages())


def test_total_is_incremental_and_follows_rewrites() -> None:
    s = Session(system="sys")
    tok = Tokenizer.for_model(MODEL)
    for i in range(20):
        s.add({"role": "user", "content": f"message number {i}"})
        assert s.token_count(MODEL) == tok.count_request(s.derive_messages())
    seqs = s.surface_seqs()
    s.append_event(
        "user/message",
        {"role": "user", "content": "<compaction-summary>\nshort\n</compaction-summary>"},
        surface_op={"op": "fold", "start": seqs[1], "end": seqs[15], "keep": [seqs[3]]},
        source_event_seqs=[x for x in seqs[1:16] if x != seqs[3]],
    )
    assert s.token_count(MODEL) == tok.count_request(s.derive_messages())
    tools = [{"type": "function", "function": {"name": "ls", "description": "list", "parameters": {}}}]
    assert s.token_count(MODEL, tools) == tok.count_request(s.derive_messages(), tools)


def test_unknown_models_get_a_marked_estimate() -> None:
    s = Session(system="x" * 400)
    assert not Tokenizer.for_model("llama-3-8b").exact
    assert s.token_count("llama-3-8b") > 0
