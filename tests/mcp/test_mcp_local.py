"""End to end with the local model (Gemma 3 270M in process): it calls the real time server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldlog import Agent, LocalLlama, Options
from tests.mcp.mcp_helpers import results, time_server
from tests.providers.local_model import require_local

pytestmark = [pytest.mark.slow, pytest.mark.local_model]

TIME_EXAMPLE: Any = (
    frozenset({"get_current_time"}),
    (
        {"role": "user", "content": "What time is it in UTC?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "example-t",
                    "type": "function",
                    "function": {"name": "get_current_time", "arguments": '{"timezone": "UTC"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "example-t", "content": '{"datetime": "2024-05-01T09:30:00+00:00"}'},
        {"role": "assistant", "content": "It is 09:30 in UTC."},
    ),
)


def test_the_local_model_calls_the_time_server() -> None:
    require_local()
    provider = LocalLlama(n_ctx=4096, examples=(TIME_EXAMPLE,))
    agent = Agent(provider, tools=[time_server()], options=Options(max_steps=3))

    async def first_step_calls(ctx: Any, next: Any) -> Any:
        # the small model needs the nudge the CLI's --force-tool gives: call on the first step
        if ctx.step == 1:
            ctx.params["tool_choice"] = {"type": "function", "function": {"name": "get_current_time"}}
        return await next()

    agent.hooks.request(first_step_calls)
    answer = agent.run_sync("What time is it in UTC right now?")
    calls = [e["data"] for e in agent.session.events if e["type"] == "tool/call"]
    assert calls and calls[0]["name"] == "get_current_time"
    assert isinstance(json.loads(calls[0]["arguments"])["timezone"], str)  # valid for the schema
    first = results(agent.session)[0]
    assert "timezone" in first["content"].lower()  # the server's own answer (a time, or its error)
    assert isinstance(answer, str)
