"""Declared abilities (docs/providers.md, "Abilities"): every provider of the package declares its
optional abilities on `ProviderBase`; a provider of one's own that implements only the `Provider`
protocol gets the defaults through `declared`, and runs in an agent as it did."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from foldlog import Agent, Session
from foldlog.agent.request import HookedProvider
from foldlog.cost.prices import Price
from foldlog.log.grammar.types import Usage
from foldlog.providers import DeepSeek, OpenAI, OpenAICompatible, Scripted
from foldlog.providers.base import (
    Chunk,
    Done,
    Provider,
    ProviderBase,
    Request,
    TextDelta,
    UsageChunk,
    declared,
)
from foldlog.providers.content import TEXT_ONLY


class ProtocolOnly:
    """The four required members and nothing else."""

    model = "mine"

    def __init__(self) -> None:
        self.requests: list[Request] = []

    @property
    def context_window(self) -> int | None:
        return 4096

    async def stream(self, request: Request) -> AsyncIterator[Chunk]:
        self.requests.append(request)
        yield TextDelta("hello")
        yield UsageChunk(Usage(prompt_tokens=10, completion_tokens=1))
        yield Done("stop")

    async def aclose(self) -> None:
        return None


def test_a_protocol_only_provider_gets_the_defaults() -> None:
    mine = ProtocolOnly()
    assert isinstance(mine, Provider) and not isinstance(mine, ProviderBase)
    abilities = declared(mine)
    assert abilities.content_types is None and abilities.structured_output is False
    assert abilities.price_provider is None and abilities.prices is None
    assert abilities.requests_sent is None and abilities.wire_style() is None
    with pytest.raises(AttributeError):
        abilities.structured_output = True  # type: ignore[misc]  # the defaults are shared: read-only


def test_a_protocol_only_provider_runs_in_an_agent_with_the_defaults() -> None:
    mine = ProtocolOnly()
    agent = Agent(mine, session=Session(system="s"))
    assert agent.run_sync("hi") == "hello"
    (request,) = mine.requests
    # no wire style: no cached wire JSON; no content_types: the request's blocks are not indexed
    assert request.wire is None and request.content is None
    assert list(request.messages) == list(agent.session.wire_messages())[:2]
    assert agent.meter.provider is None and agent.meter.prices is None


def test_the_package_providers_declare_their_own() -> None:
    assert declared(Scripted()) is not None and isinstance(Scripted(), ProviderBase)
    ds = DeepSeek("sk-x", prices={"deepseek-v4-flash": Price(input=0.5, output=1.0)})
    assert declared(ds) is ds
    assert (ds.price_provider, ds.content_types, ds.structured_output) == ("deepseek", TEXT_ONLY, False)
    assert ds.requests_sent == 0 and ds.wire_style() in ("with-calls", "strip")
    oa = OpenAI(api_key="k")
    assert (oa.price_provider, oa.structured_output, oa.prices) == ("openai", True, None)
    compat = OpenAICompatible("http://127.0.0.1:9/v1", model="m", structured_output=True)
    assert compat.structured_output and not OpenAICompatible.structured_output
    assert compat.wire_style() == "strip"


def test_the_hooked_provider_declares_the_wrapped_ones() -> None:
    ds = DeepSeek("sk-x", prices={"deepseek-v4-flash": Price(input=0.5, output=1.0)})
    agent = Agent(ds)
    hooked = HookedProvider(agent, ds, "compaction")
    assert isinstance(hooked, ProviderBase) and declared(hooked) is hooked
    assert hooked.price_provider == "deepseek" and hooked.prices == ds.prices
    assert hooked.content_types == TEXT_ONLY and hooked.wire_style() == ds.wire_style()
    assert hooked.model == ds.model and hooked.context_window == ds.context_window
    plain = HookedProvider(agent, ProtocolOnly(), "compaction")
    assert plain.price_provider is None and plain.wire_style() is None and plain.content_types is None
