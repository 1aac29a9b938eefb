"""A tool's returned value (dict, list, number) is logged as valid JSON text: NaN and ±Infinity,
which JSON cannot spell, become ``null`` (docs/tools.md); lone surrogates and split pairs in a
returned ``str`` follow the one text rule (`foldlog.log.text.clean_text`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foldlog import Agent, Session, tool
from foldlog.providers import Scripted
from foldlog.tools.runner import to_text
from tests.agent.agent_helpers import call, of_type, reply


def _strict(text: str) -> Any:
    """JSON as a strict reader takes it: ``NaN``/``Infinity`` are not JSON."""

    def refuse(word: str) -> Any:
        raise ValueError(f"not JSON: {word}")

    return json.loads(text, parse_constant=refuse)


def test_a_tool_result_holding_nan_is_logged_as_valid_json(tmp_path: Path) -> None:
    @tool
    def measure() -> dict[str, Any]:
        """Measure."""
        return {"x": float("nan"), "y": [float("inf"), -float("inf"), 1.5], "z": {"w": float("nan")}}

    path = tmp_path / "s.jsonl"
    with Session.open(path) as session:
        agent = Agent(Scripted([reply("", call("measure", {}, "m")), reply("done")]), [measure], session)
        assert agent.run_sync("measure") == "done"
    [result] = [e["data"]["message"] for e in of_type(Session.load(path), "tool/result")]
    assert not result["isError"]
    assert _strict(result["content"]) == {"x": None, "y": [None, None, 1.5], "z": {"w": None}}


def test_finite_values_and_what_json_cannot_hold_are_written_as_before() -> None:
    assert to_text({"a": 1.5, "b": "é"}) == '{"a": 1.5, "b": "é"}'
    assert to_text(float("nan")) == "null"
    assert to_text({"when": {1, 2}}) == '{"when": "{1, 2}"}'  # not JSON: its str
    loop: list[Any] = []
    loop.append(loop)
    assert to_text(loop) == "[[...]]"  # circular: its str, never a crash


def test_a_returned_str_with_a_split_surrogate_pair_is_joined() -> None:
    @tool
    def emoji() -> str:
        """An emoji held as two UTF-16 code units (a JSON decoder's output for split escapes)."""
        return "ok \ud83d\ude00 and lone \ud83d"

    session = Session()
    Agent(Scripted([reply("", call("emoji", {}, "e")), reply("done")]), [emoji], session).run_sync("go")
    [event] = of_type(session, "tool/result")
    assert event["data"]["message"]["content"] == "ok \U0001f600 and lone \ufffd"
    assert event["data"]["meta"] == {"utf8Replaced": 1}
