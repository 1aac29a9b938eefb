"""Typed final answers: ``run(prompt, output_type=T)`` with the final-answer tool (Scripted) and the
native JSON schema (recorded OpenAI structured-output streams), retries, the logged answer."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Literal, TypedDict

import pytest
from pydantic import BaseModel

from foldlog import Agent, Options, OutputValidationError, Session, tool
from foldlog.agent.output import OutputSpec
from foldlog.errors import ConfigError
from foldlog.providers.http.openai_compat import OpenAICompatible
from foldlog.providers.scripted import Scripted
from tests.conftest import SHARED
from tests.support.http_server import LoopbackServer, sse

OPENAI_PY = SHARED.joinpath("corpus", "openai-python-snapshots")
PARSED_MODEL = OPENAI_PY / "7e5ea4d12e7cc064399b6631415e65923f182256b6e6b752950a3aaa2ad2320a.sse"
REFUSAL = OPENAI_PY / "173417d553406f034f643e5db3f8d591fb691ebac56f5ae39a22cc7d455c5353.sse"


class Location(BaseModel):
    city: str
    temperature: float
    units: Literal["c", "f"]


@dataclasses.dataclass
class City:
    name: str
    population: int


class Pair(TypedDict):
    left: int
    right: int


def final(args: dict[str, Any], cid: str = "f") -> dict[str, Any]:
    return {"tool_calls": [{"id": cid, "name": "final_answer", "arguments": args}]}


def events(agent: Agent, kind: str) -> list[dict[str, Any]]:
    return [dict(e["data"]) for e in agent.session.events if e["type"] == kind]


class NativeScripted(Scripted):
    """A scripted endpoint that declares native JSON-schema output."""

    structured_output = True


def test_a_valid_pydantic_answer_through_the_final_answer_tool() -> None:
    provider = Scripted([final({"city": "Lyon", "temperature": 21.5, "units": "c"})])
    agent = Agent(provider)
    answer = agent.run_sync("weather in Lyon?", output_type=Location)
    assert answer == Location(city="Lyon", temperature=21.5, units="c")
    (offered,) = provider.requests[0].tools
    assert offered["function"]["name"] == "final_answer"
    assert offered["function"]["parameters"]["required"] == ["city", "temperature", "units"]
    (validated,) = events(agent, "output/validated")
    assert validated["value"] == {"city": "Lyon", "temperature": 21.5, "units": "c"}
    assert validated["name"] == "Location" and validated["mode"] == "tool" and validated["retries"] == 0
    assert "final_answer" not in agent.registry  # offered for the run only
    assert events(agent, "turn/end")[-1]["reason"]["kind"] == "completed"


def test_an_invalid_answer_goes_back_naming_the_field_then_a_valid_one_is_taken() -> None:
    provider = Scripted(
        [final({"name": "Paris", "population": "lots"}), final({"name": "Paris", "population": 2100000}, "g")]
    )
    agent = Agent(provider)
    assert agent.run_sync("biggest city?", output_type=City) == City("Paris", 2100000)
    first, second = (dict(e["data"]["message"]) for e in agent.session.events if e["type"] == "tool/result")
    assert first["isError"] and "$.population: expected integer, got string" in first["content"]
    assert second == {**second, "content": "final answer accepted", "isError": False}
    assert events(agent, "output/validated")[0]["retries"] == 1


def test_an_answer_that_never_validates_raises_with_the_last_reply_and_errors() -> None:
    bad = [final({"left": 1, "right": str(i)}, f"c{i}") for i in range(3)]
    agent = Agent(Scripted(bad))
    with pytest.raises(OutputValidationError) as info:
        agent.run_sync("two numbers", output_type=Pair)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.errors == ["$.right: expected integer, got string"]
    assert json.loads(err.reply) == {"left": 1, "right": "2"}
    assert "after 2 retries" in str(err)
    assert events(agent, "turn/end")[-1]["reason"]["kind"] == "error"
    assert not events(agent, "output/validated")


def test_output_retries_zero_fails_at_the_first_invalid_answer() -> None:
    agent = Agent(Scripted([final({"left": "x", "right": 2})]), options=Options(output_retries=0))
    with pytest.raises(OutputValidationError, match="after 0 retries"):
        agent.run_sync("pair", output_type=Pair)


def test_a_json_schema_dict_and_a_plain_text_json_reply() -> None:
    schema = {"type": "array", "items": {"type": "integer", "minimum": 0}, "maxItems": 3}
    provider = Scripted(
        [{"content": "Sure! Here they are."}, {"content": "[1, -2]"}, {"content": "```json\n[1, 2]\n```"}]
    )
    agent = Agent(provider)
    assert agent.run_sync("three numbers", output_type=schema) == [1, 2]
    retries = [m for m in events(agent, "user/message") if m.get("source") == "output-retry"]
    assert len(retries) == 2
    assert "not JSON" in retries[0]["content"] and "$[1]: -2 is not at least 0" in retries[1]["content"]
    (offered,) = provider.requests[0].tools  # a non-object schema is wrapped as {"value": …}
    assert offered["function"]["parameters"]["properties"]["value"] == schema


def test_the_final_answer_comes_after_other_tools() -> None:
    @tool(read_only=True)
    def lookup(city: str) -> int:
        """Population of a city."""
        return {"Oslo": 709000}[city]

    provider = Scripted(
        [
            {"tool_calls": [{"id": "l", "name": "lookup", "arguments": {"city": "Oslo"}}]},
            final({"name": "Oslo", "population": 709000}),
        ]
    )
    agent = Agent(provider, tools=[lookup])
    assert agent.run_sync("Oslo?", output_type=City) == City("Oslo", 709000)
    assert [t["function"]["name"] for t in provider.requests[1].tools] == ["final_answer", "lookup"]


def test_native_mode_sends_the_schema_and_retries_a_reply_that_does_not_validate() -> None:
    provider = NativeScripted(
        [{"content": '{"name": "Rome"}'}, {"content": '{"name": "Rome", "population": 2800000}'}]
    )
    agent = Agent(provider)
    assert agent.run_sync("Rome?", output_type=City) == City("Rome", 2800000)
    fmt = provider.requests[0].params["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "City"
    assert fmt["json_schema"]["schema"]["required"] == ["name", "population"]
    assert not provider.requests[0].tools  # no final-answer tool
    (retry,) = (m for m in events(agent, "user/message") if m.get("source") == "output-retry")
    assert "missing required property 'population'" in retry["content"]
    header = events(agent, "request/header")[0]
    assert header["params"]["response_format"] == fmt  # the schema is in the log too
    assert events(agent, "output/validated")[0]["mode"] == "native"


def _replay(path: Path, output_type: Any, **options: Any) -> tuple[Any, list[Any]]:
    async def go() -> tuple[Any, list[Any]]:
        async with LoopbackServer([sse(path.read_bytes(), piece=97)]) as srv:
            provider = OpenAICompatible(
                srv.base_url, "k", "gpt-4o-2024-08-06", structured_output=True, max_retries=0
            )
            try:
                agent = Agent(provider, options=Options(**options))
                answer = await agent.run("What's the weather like in SF?", output_type=output_type)
            finally:
                await provider.aclose()
            return answer, [r.json() for r in srv.requests]

    return asyncio.run(go())


def test_a_recorded_openai_structured_output_stream_validates() -> None:
    assert PARSED_MODEL.is_file(), f"{PARSED_MODEL} is missing (the shared corpus)"
    answer, bodies = _replay(PARSED_MODEL, Location)
    assert answer == Location(city="San Francisco", temperature=61, units="f")
    fmt = bodies[0]["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Location"
    assert fmt["json_schema"]["schema"]["properties"]["units"]["enum"] == ["c", "f"]
    assert "tools" not in bodies[0]


def test_a_recorded_refusal_is_not_an_answer() -> None:
    assert REFUSAL.is_file(), f"{REFUSAL} is missing (the shared corpus)"
    with pytest.raises(OutputValidationError) as info:
        _replay(REFUSAL, Location, output_retries=0)
    assert "I'm sorry, I can't assist with that request." in info.value.reply
    assert info.value.errors[0].startswith("$: the reply is not JSON")


def test_the_validated_answer_is_in_the_log_after_a_reload(tmp_path: Path) -> None:
    session = Session.open(tmp_path, "typed")
    agent = Agent(Scripted([final({"name": "Bern", "population": 134000})]), session=session)
    agent.run_sync("capital?", output_type=City)
    session.close()
    reloaded = Session.open(tmp_path / "typed.jsonl")
    (ev,) = (e for e in reloaded.events if e["type"] == "output/validated")
    assert ev["data"]["value"] == {"name": "Bern", "population": 134000}
    reloaded.close()


def test_bad_output_types_and_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="output_type must be"):
        OutputSpec.of(int)
    with pytest.raises(ConfigError, match="output_retries"):
        Options(output_retries=-1)

    @tool
    def final_answer(x: int) -> int:
        """A tool that takes the reserved name."""
        return x

    agent = Agent(Scripted([{"content": "{}"}]), tools=[final_answer])
    with pytest.raises(ConfigError, match="final-answer tool"):
        agent.run_sync("x", output_type=City)
    assert agent.registry.get("final_answer") is not None


def test_pydantic_is_imported_only_for_a_pydantic_output_type() -> None:
    code = (
        "import sys, dataclasses\n"
        "from foldlog import Agent\n"
        "from foldlog.providers.scripted import Scripted\n"
        "@dataclasses.dataclass\n"
        "class P:\n    x: int\n"
        "reply = {'tool_calls': [{'name': 'final_answer', 'arguments': {'x': 3}}]}\n"
        "print(Agent(Scripted([reply])).run_sync('x', output_type=P), 'pydantic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "P(x=3) False"


# --- every invalid answer is a retry; what the docs accept is accepted (issue #26, item 6) ---


def test_final_answer_arguments_that_are_not_json_count_as_retries() -> None:
    """Before: the runner refused the arguments before the tool saw them, no retry was counted,
    and the run went on to the step limit (11 requests, then `MaxStepsExceeded`)."""
    bad = {"tool_calls": [{"id": "f", "name": "final_answer", "arguments": "{name: Oslo"}]}
    provider = Scripted([bad] * 11)
    agent = Agent(provider, options=Options(max_steps=10))
    with pytest.raises(OutputValidationError) as info:
        agent.run_sync("The capital of Norway?", output_type=City)
    assert len(provider.requests) == 3  # the answer and its two retries
    err = info.value
    assert "after 2 retries" in str(err) and "not JSON" in str(err)
    assert err.reply == "{name: Oslo"
    results = events(agent, "tool/result")
    assert all(
        r["message"]["isError"] and "invalid JSON arguments" in r["message"]["content"] for r in results
    )
    assert events(agent, "turn/end")[-1]["reason"]["kind"] == "error"


def test_final_answer_arguments_that_are_not_an_object_count_as_retries() -> None:
    bad = {"tool_calls": [{"id": "f", "name": "final_answer", "arguments": "[1, 2]"}]}
    agent = Agent(Scripted([bad] * 3), options=Options(output_retries=1))
    with pytest.raises(OutputValidationError, match="must be a JSON object"):
        agent.run_sync("pair", output_type=Pair)


def test_a_fenced_json_block_inside_other_text_is_accepted() -> None:
    text = 'Here is the answer:\n\n```json\n{"name": "Oslo", "population": 709000}\n```\n\nHope that helps!'
    agent = Agent(Scripted([{"content": text}]))
    assert agent.run_sync("The capital of Norway?", output_type=City) == City("Oslo", 709000)
    assert events(agent, "output/validated")[0]["retries"] == 0


def test_which_fenced_block_is_the_answer() -> None:
    from foldlog.agent.output import parse_json_text

    # an unlabelled block counts when no block is labelled json; a labelled one wins over it
    assert parse_json_text("Result:\n```\n[1, 2]\n```") == ([1, 2], None)
    assert parse_json_text('```python\nx = 1\n```\nand\n```json\n{"a": 1}\n```') == ({"a": 1}, None)
    value, why = parse_json_text('one\n```json\n{"a": 1}\n```\ntwo\n```json\n{"a": 2}\n```')
    assert value is None and why is not None and "2 fenced JSON blocks" in why
    value, why = parse_json_text("no json here")
    assert value is None and why is not None and why.startswith("the reply is not JSON")


def test_two_final_answers_in_one_reply_get_an_error_asking_for_one() -> None:
    from foldlog.agent.output import MULTIPLE

    two = {
        "tool_calls": [
            {"id": "f1", "name": "final_answer", "arguments": {"name": "Oslo", "population": 709000}},
            {"id": "f2", "name": "final_answer", "arguments": {"name": "Bergen", "population": 291000}},
        ]
    }
    agent = Agent(Scripted([two, final({"name": "Oslo", "population": 709000}, "f3")]))
    assert agent.run_sync("The capital of Norway?", output_type=City) == City("Oslo", 709000)
    results = [r["message"] for r in events(agent, "tool/result")]
    assert [r["isError"] for r in results] == [True, True, False]
    assert results[0]["content"] == results[1]["content"] == MULTIPLE.format(n=2)
    assert "exactly once" in results[0]["content"]
    assert events(agent, "output/validated")[0]["retries"] == 1  # one invalid reply, one retry
