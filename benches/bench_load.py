"""B1: open a large log — parse, validate, repair, derive the surface — on three workloads: a
~100 MB log of real (large) messages, ≥ 400k small messages (~250 bytes), and ≥ 400k tiny
messages (every text under 100 bytes: user text, tool call, tool result).

foldlog, two ways:

- to ready: ``Session.load(path)`` and ``len(derive_messages())`` — the log read (one buffer,
  parsed in parallel chunks), checked, repaired and derived; a request body could be built. No
  message becomes a Python object;
- every message materialised: the same, then ``list(derive_messages())`` (a read-only dict per
  message).

Baselines: the same work in Python (`pyload.py`) with ``orjson`` on every workload (and with
``json`` on the first), which parses every line into Python objects. Before timing, both sides
are checked to derive the same messages from the same file.

pytest benches/bench_load.py --benchmark-json=b1.json
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from foldlog import Session
from pyload import load as py_load
from workloads import Workload, log_100mb, log_small_messages, log_tiny_messages

ROUNDS = 3
GROUP = "B1 load"
WORKLOADS: dict[str, Callable[[], Workload]] = {
    "large": log_100mb,
    "small": log_small_messages,
    "tiny": log_tiny_messages,
}


def _orjson_dumps(v: Any) -> str:
    return orjson.dumps(v).decode()


def _json_dumps(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def to_ready(path: str) -> int:
    """Load to ready: a request could be built now; no message is a Python object yet."""
    return len(Session.load(path).derive_messages())


def materialised(path: str) -> list[Any]:
    return list(Session.load(path).derive_messages())


BASELINES: dict[str, Callable[[str], Any]] = {
    "orjson": lambda p: py_load(p, orjson.loads, _orjson_dumps),
    "json": lambda p: py_load(p, json.loads, _json_dumps),
}

_checked: dict[str, Workload] = {}


def checked(name: str) -> Workload:
    """The workload, once its derivation is checked equal to the Python baseline's."""
    if name not in _checked:
        w = WORKLOADS[name]()
        ours = [dict(m) for m in materialised(str(w.path))]
        theirs, repairs = BASELINES["orjson"](str(w.path))
        assert repairs == 0
        assert len(ours) == len(theirs)
        assert orjson.loads(orjson.dumps(ours)) == theirs
        _checked[name] = w
    return _checked[name]


def _info(benchmark: Any, w: Workload, name: str, role: str) -> None:
    benchmark.group = f"{GROUP} ({name})"
    benchmark.extra_info.update(
        {
            "row": "B1",
            "workload_name": name,
            "role": role,
            "events": w.events,
            "bytes": w.bytes,
            "workload": w.describe(),
        }
    )


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_b1_ready(benchmark: Any, name: str) -> None:
    w = checked(name)
    _info(benchmark, w, name, "foldlog ready")
    benchmark.pedantic(to_ready, args=(str(w.path),), rounds=ROUNDS, warmup_rounds=1)


@pytest.mark.parametrize("name", list(WORKLOADS))
def test_b1_materialised(benchmark: Any, name: str) -> None:
    w = checked(name)
    _info(benchmark, w, name, "foldlog materialised")
    benchmark.pedantic(materialised, args=(str(w.path),), rounds=ROUNDS, warmup_rounds=1)


@pytest.mark.parametrize(
    ("name", "parser"), [("large", "orjson"), ("large", "json"), ("small", "orjson"), ("tiny", "orjson")]
)
def test_b1_python(benchmark: Any, name: str, parser: str) -> None:
    w = checked(name)
    _info(benchmark, w, name, f"baseline-{parser}")
    rounds = ROUNDS if parser == "orjson" else 2
    benchmark.pedantic(BASELINES[parser], args=(str(w.path),), rounds=rounds, warmup_rounds=1)
