"""Tiers 1 and 2 of the compaction benchmark, with scripted readers and judges: the reader's
prompts, answers and exact-match scoring, the baseline cut to the window, the cache keyed by the
request (a re-run sends nothing), and the judge's six scores."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from foldlog.compaction.judge import DIMENSIONS, judge, judge_columns, parse_scores
from foldlog.compaction.model_cache import ModelCache, complete, request_key
from foldlog.compaction.probes import Category, Probe
from foldlog.compaction.reader import (
    Recall,
    is_right,
    parse_answers,
    read,
    reader_request,
    recall_columns,
    surface_for_reader,
)
from foldlog.errors import ConfigError
from foldlog.providers.base import Request
from foldlog.providers.scripted import Scripted

MESSAGES: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the parser. Ticket PROJ-12 tracks it."},
    {"role": "assistant", "content": "I edited src/alpha.py."},
]
PROBES = [
    Probe("artifact", "Which file was edited?", ("/repo/src/alpha.py", "src/alpha.py"), 3),
    Probe("identifier", "Which ticket key did the user mention?", ("PROJ-12",), 1),
    Probe("identifier", "Which version did a tool result mention?", ("v9.9.9",), 2),
    Probe("decision", "What was the plan?", ("1. [x] fix",), 4),
]


def conversation(request: Request) -> str:
    """The transcript part of a reader / judge prompt."""
    user = str(request.messages[1]["content"])
    return user.split("Conversation:\n\n", 1)[-1].split("\n\nQuestions:", 1)[0]


def echo_reader(request: Request) -> dict[str, Any]:
    """A reader that answers every question with the whole conversation on one line: it is right
    exactly when the answer is on the surface it was given (recall = survival)."""
    n = len(re.findall(r"^\d+\. ", str(request.messages[1]["content"]).split("Questions:\n", 1)[1], re.M))
    line = conversation(request).replace("\n", " ")
    return {"content": "\n".join(f"{k}. {line}" for k in range(1, n + 1))}


def test_answers_are_parsed_by_number_and_matched_exactly() -> None:
    assert parse_answers("2) PROJ-12\n1. src/alpha.py\n", 3) == ["src/alpha.py", "PROJ-12", ""]
    assert parse_answers("src/alpha.py\nPROJ-12", 2) == ["src/alpha.py", "PROJ-12"]  # unnumbered: in order
    assert is_right(PROBES[0], "It was ./SRC/alpha.py, edited twice")
    assert not is_right(PROBES[0], "src/alpha.pyc") and not is_right(PROBES[1], "PROJ-123")
    assert not is_right(PROBES[1], "unknown")


def test_a_surface_longer_than_the_window_is_cut_from_the_start_and_said_so() -> None:
    long = [{"role": "user", "content": f"turn {k} " + "x" * 50} for k in range(100)]
    text, cut = surface_for_reader(long, 300)
    assert cut and len(text) <= 300 and text.endswith("turn 99 " + "x" * 50) and "turn 0 " not in text
    assert surface_for_reader(MESSAGES, 10_000) == (
        "[user] Fix the parser. Ticket PROJ-12 tracks it.\n[assistant] I edited src/alpha.py.",
        False,
    )


def test_recall_is_asked_k_per_prompt_r_times_and_cached_by_request(tmp_path: Path) -> None:
    reader = Scripted([echo_reader] * 4, model="reader", context_window=8_000)
    cache = ModelCache(tmp_path / "cache")
    recall = asyncio.run(read(reader, PROBES, MESSAGES, cache=cache, per_prompt=2, replicates=2))
    # 3 scored probes (decision is the judge's), 2 per prompt: 2 prompts x 2 replicates
    assert reader.calls == 4 and (cache.misses, cache.hits) == (4, 0)
    assert dict(recall.asked) == {"artifact": 1, "identifier": 2}
    assert recall.shares("artifact") == [1.0, 1.0] and recall.shares("identifier") == [0.5, 0.5]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 4
    # a re-run (a fresh cache object on the same folder) sends nothing
    again = ModelCache(tmp_path / "cache")
    silent = Scripted([], model="reader", context_window=8_000)
    assert asyncio.run(read(silent, PROBES, MESSAGES, cache=again, per_prompt=2, replicates=2)) == recall
    assert silent.calls == 0 and again.hits == 4
    # replicates are distinct calls: the key holds the replicate number
    req = reader_request("t", ["q"])
    assert request_key("m", req, 0) != request_key("m", req, 1) == request_key("m", req, 1)


def test_recall_columns_give_shares_the_baseline_and_the_spread() -> None:
    two: dict[Category, int] = {"artifact": 2}
    one: dict[Category, int] = {"artifact": 1}
    folded = Recall(two, (one, two, {}), False)
    base = Recall(two, (two,) * 3, True)
    row = recall_columns(folded, base)
    assert row["recall_artifact"] == 0.5 and row["recall_base_artifact"] == 1.0
    assert row["recall_spread_artifact"] == 1.0 and row["baseline_cut"] is True and row["folded_cut"] is False
    assert row["recall_error"] is None and row["recall_spread_error"] is None


def test_bad_counts_are_refused_by_name() -> None:
    reader = Scripted([], model="reader")
    with pytest.raises(ConfigError, match="--probes-per-prompt"):
        asyncio.run(read(reader, PROBES, MESSAGES, cache=ModelCache(None), per_prompt=0))
    with pytest.raises(ConfigError, match="--replicates"):
        asyncio.run(read(reader, PROBES, MESSAGES, cache=ModelCache(None), replicates=0))


def test_a_provider_error_is_not_cached(tmp_path: Path) -> None:
    from foldlog.errors import ProviderError

    cache = ModelCache(tmp_path)
    failing = Scripted([ProviderError("down"), {"content": "1. ok"}], model="m")
    with pytest.raises(ProviderError):
        asyncio.run(complete(failing, reader_request("t", ["q"]), cache))
    assert asyncio.run(complete(failing, reader_request("t", ["q"]), cache)) == "1. ok"
    assert cache.misses == 1 and len(list(tmp_path.glob("*.json"))) == 1


def test_the_judge_scores_six_dimensions_and_their_mean(tmp_path: Path) -> None:
    seen: list[Request] = []

    def scores(request: Request) -> dict[str, Any]:
        seen.append(request)
        return {
            "content": 'Here: {"accuracy": 5, "context_awareness": 4, "artifact_trail": 3, '
            '"completeness": 4, "continuity": 4, "instruction_following": 9}'
        }

    cols = asyncio.run(judge(Scripted([scores], model="j"), PROBES, MESSAGES, cache=ModelCache(tmp_path)))
    assert cols["judge_accuracy"] == 5.0 and cols["judge_artifact_trail"] == 3.0
    assert cols["judge_instruction_following"] is None  # out of 0-5: not a score
    assert cols["judge_overall"] == 4.0
    prompt = str(seen[0].messages[1]["content"])
    # the judge sees the post-fold surface and every probe with its reference, decision included
    assert "I edited src/alpha.py." in prompt and "[decision] What was the plan?" in prompt
    assert "Reference: /repo/src/alpha.py | src/alpha.py" in prompt
    assert all(d in str(seen[0].messages[0]["content"]) for d in DIMENSIONS)
    assert parse_scores("no json") == dict.fromkeys(DIMENSIONS)
    assert judge_columns(parse_scores("no json"))["judge_overall"] is None
