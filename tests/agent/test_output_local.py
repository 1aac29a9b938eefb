"""Typed output end to end with the local model: the answer is constrained by the schema (the
``response_format`` becomes llama.cpp's grammar) and validates."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Literal, TypedDict

import pytest

from foldlog import Agent, LocalLlama
from tests.providers.local_model import require_local

pytestmark = [pytest.mark.slow, pytest.mark.local_model]


class Planet(TypedDict):
    planet: Literal["Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn"]
    has_rings: bool


@pytest.fixture(scope="module")
def provider() -> Iterator[LocalLlama]:
    require_local()
    p = LocalLlama(n_ctx=4096)
    asyncio.run(p.start())
    yield p
    asyncio.run(p.aclose())


def test_the_local_model_answers_in_the_schema(provider: LocalLlama) -> None:
    agent = Agent(provider)
    answer = agent.run_sync("Which planet has the most famous rings?", output_type=Planet)
    assert answer["planet"] in ("Mercury", "Venus", "Earth", "Mars", "Jupiter", "Saturn")
    assert isinstance(answer["has_rings"], bool)
    (validated,) = (e["data"] for e in agent.session.events if e["type"] == "output/validated")
    assert validated["mode"] == "native" and validated["retries"] == 0
    (reply,) = (e["data"]["message"] for e in agent.session.events if e["type"] == "assistant/message")
    assert reply["content"].lstrip().startswith("{")


def test_a_json_schema_dict_constrains_the_local_model(provider: LocalLlama) -> None:
    schema = {
        "type": "object",
        "properties": {"colour": {"enum": ["red", "green", "blue"]}, "bright": {"type": "boolean"}},
        "required": ["colour", "bright"],
        "additionalProperties": False,
    }
    answer = Agent(provider).run_sync("What colour is the sky on a clear day?", output_type=schema)
    assert set(answer) == {"colour", "bright"} and answer["colour"] in ("red", "green", "blue")
