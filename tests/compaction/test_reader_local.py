"""Tier 1 with the packaged local model (Gemma 3 270M) as the reader, on a small session: the
machinery, not the model's accuracy — the recall columns and the baseline come out, and a re-run
is answered from the cache without loading a model call."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest

from foldlog.batch import GridPoint, run_batch
from foldlog.cli.batch_cmd import summary_provider
from foldlog.compaction.probes import SCORED
from tests.compaction.test_probes import _session
from tests.providers.local_model import require_local

pytestmark = [pytest.mark.slow, pytest.mark.local_model]


def test_the_local_model_reads_the_probes_and_a_rerun_is_cached(tmp_path: Path) -> None:
    require_local()
    log = tmp_path / "s.jsonl"
    _session().save(log)
    local = functools.partial(summary_provider, {"provider": "local", "model": None, "base_url": None})
    kw: dict[str, Any] = {
        "engine": "serial",
        "points": [GridPoint(4_000, 120, "none")],
        "cache_dir": tmp_path / "cache",
    }
    first = run_batch(
        "compact-eval",
        [str(log)],
        out=tmp_path / "a.jsonl",
        reader=local,
        probes_per_prompt=8,
        replicates=2,
        **kw,
    )
    (row,) = first.rows
    assert row["error"] is None and row["folded"] > 0
    for c in SCORED:
        assert f"recall_{c}" in row and f"recall_base_{c}" in row
        if row[f"probes_{c}"]:
            assert 0.0 <= row[f"recall_{c}"] <= 1.0 and 0.0 <= row[f"recall_base_{c}"] <= 1.0
    assert row["baseline_cut"] is False and row["model_calls"] == 4  # 1 prompt x 2 replicates x 2 surfaces
    second = run_batch(
        "compact-eval",
        [str(log)],
        out=tmp_path / "b.jsonl",
        reader=local,
        probes_per_prompt=8,
        replicates=2,
        **kw,
    )
    (again,) = second.rows
    assert again["model_calls"] == 0 and again["model_cache_hits"] == 4
    assert [again[f"recall_{c}"] for c in SCORED] == [row[f"recall_{c}"] for c in SCORED]
