"""B1: open a ~100 MB log — parse, validate, repair, derive the surface.

foldlog: ``Session.load(path)`` + ``derive_messages()`` (Python objects for every message), and
the core-only path ``_core.Log.read_file`` + repair check + ``wire_json()`` (no Python objects).
Baselines: the same work in Python (`pyload.py`) with ``orjson`` and with ``json``. Before timing,
both sides are checked to derive the same messages from the same file.

pytest benches/bench_load.py --benchmark-json=b1.json
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from foldlog import Session, _core
from pyload import load as py_load
from workloads import Workload

ROUNDS = 3  # ~10 s a round on each side: the whole suite must fit in 30 minutes on 2 cores
GROUP = "B1 load 100 MB"


def _info(benchmark: Any, w: Workload, role: str) -> None:
    benchmark.extra_info.update(
        {"row": "B1", "role": role, "events": w.events, "bytes": w.bytes, "workload": w.describe()}
    )


def _orjson_dumps(v: Any) -> str:
    return orjson.dumps(v).decode()


def _json_dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def foldlog_load(path: str) -> tuple[Any, ...]:
    s = Session.load(path)
    return s.derive_messages()


def core_load(path: str) -> bytes:
    log, _info = _core.Log.read_file(path)
    log.repair_needed()
    return log.wire_json()


BASELINES: dict[str, Callable[[str], Any]] = {
    "orjson": lambda p: py_load(p, orjson.loads, _orjson_dumps),
    "json": lambda p: py_load(p, json.loads, _json_dumps),
}


@pytest.fixture(scope="module")
def checked(log_100mb_workload: Workload) -> Workload:
    """Same file, same answer: foldlog's derived messages equal the Python baseline's."""
    w = log_100mb_workload
    ours = [dict(m) for m in foldlog_load(str(w.path))]
    theirs, repairs = BASELINES["orjson"](str(w.path))
    assert repairs == 0
    assert len(ours) == len(theirs)
    assert orjson.loads(orjson.dumps(ours)) == theirs
    # the core path ends in the request body: the send normalizer's view of the same messages
    wire = Session.load(str(w.path)).wire_messages()
    assert orjson.loads(core_load(str(w.path))) == orjson.loads(orjson.dumps(wire))
    return w


def test_b1_foldlog_session(benchmark: Any, checked: Workload) -> None:
    benchmark.group = GROUP
    _info(benchmark, checked, "foldlog")
    benchmark.pedantic(foldlog_load, args=(str(checked.path),), rounds=ROUNDS, warmup_rounds=1)


def test_b1_foldlog_core(benchmark: Any, checked: Workload) -> None:
    benchmark.group = GROUP
    _info(benchmark, checked, "foldlog-core")
    benchmark.pedantic(core_load, args=(str(checked.path),), rounds=ROUNDS, warmup_rounds=1)


@pytest.mark.parametrize("parser", list(BASELINES))
def test_b1_python(benchmark: Any, checked: Workload, parser: str) -> None:
    benchmark.group = GROUP
    _info(benchmark, checked, f"baseline-{parser}")
    rounds = ROUNDS if parser == "orjson" else 2
    benchmark.pedantic(BASELINES[parser], args=(str(checked.path),), rounds=rounds, warmup_rounds=1)
