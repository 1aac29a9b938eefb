"""A real chat with one tool call through a foldlog provider, with usage and timings.

Runs Gemma 3 270M locally (in process, llama.cpp) by default, DeepSeek when
``DEEPSEEK_API_KEY`` is set. The pretrained 270M model calls a tool it has seen called, so the
local provider gets one worked example for ``get_weather`` (``LocalLlama(examples=…)``).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from foldlog.providers import DeepSeek, LocalLlama, Request, collect
from foldlog.providers.collect import Completion
from foldlog.providers.http.openai_compat import OpenAICompatible
from foldlog.providers.local.gemma_chat import EXAMPLES

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris"}},
            "required": ["city"],
        },
    },
}


WEATHER_EXAMPLE = (
    frozenset({"get_weather"}),
    (
        {"role": "user", "content": "Is it raining in Oslo?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "w1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "w1", "content": '{"city": "Oslo", "sky": "rain", "celsius": 4}'},
        {"role": "assistant", "content": "Yes, it is raining in Oslo (4 °C)."},
    ),
)


def get_weather(city: str = "?") -> str:
    return json.dumps({"city": city, "sky": "sunny", "celsius": 21})


def _report(label: str, got: Completion, seconds: float) -> None:
    u = got.usage
    usage = (
        f"prompt {u.prompt_tokens}, completion {u.completion_tokens}, cache hit {u.cache_hit_tokens}"
        if u is not None
        else "no usage reported"
    )
    print(f"[{label}] {seconds:.2f} s, finish={got.finish_reason}, {usage}")


async def main(question: str) -> int:
    provider: OpenAICompatible
    if os.environ.get("DEEPSEEK_API_KEY"):
        provider = DeepSeek()
    else:
        provider = LocalLlama(n_ctx=4096, max_tokens=256, examples=[*EXAMPLES, WEATHER_EXAMPLE])
    print(f"provider: {provider!r}")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant. Use the tools when they help."},
        {"role": "user", "content": question},
    ]
    # the pretrained 270M model seldom decides on its own to call a tool outside the file tools of
    # its worked examples (B9 in docs/benchmarks.md measures its decisions): ask it for a call
    params = {"tool_choice": "required"} if isinstance(provider, LocalLlama) else {}
    try:
        if isinstance(provider, LocalLlama):
            t0 = time.perf_counter()
            await provider.start()
            print(f"[model] loaded in {time.perf_counter() - t0:.2f} s")
        t0 = time.perf_counter()
        first = await collect(
            provider.stream(Request(messages=messages, tools=[WEATHER_TOOL], temperature=0, params=params))
        )
        _report("request 1", first, time.perf_counter() - t0)
        if not first.tool_calls:
            print(f"answer (no tool call): {first.text}")
            return 1
        messages.append(first.message())
        for call in first.tool_calls:
            try:
                args = json.loads(call.arguments)
            except json.JSONDecodeError:
                args = {}
            result = get_weather(**{k: v for k, v in args.items() if k == "city"})
            print(f"tool call: {call.name}({call.arguments}) -> {result}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
        t0 = time.perf_counter()
        final = await collect(provider.stream(Request(messages=messages, temperature=0)))
        _report("request 2", final, time.perf_counter() - t0)
        print(f"answer: {final.text.strip()}")
        cost = getattr(provider, "cost", None)
        if callable(cost) and first.usage is not None and final.usage is not None:
            print(f"cost: {cost(first.usage) + cost(final.usage):.6f}")
        return 0
    finally:
        await provider.aclose()


if __name__ == "__main__":
    q = " ".join(sys.argv[1:]) or "What is the weather in Paris right now?"
    sys.exit(asyncio.run(main(q)))
