"""B5: per-step loop overhead of a zero-latency tool loop (25 / 200 / 2,000 steps).

foldlog ``Agent.run`` with the scripted provider, against the OpenAI Agents SDK (``Runner.run``
with a fake ``Model``) and pydantic-ai (``FunctionModel``). Every side runs the same work: the
model calls one async no-op tool per step, then answers ``done``; each run is checked to make
exactly N tool calls and return ``done`` before it is timed.

    pytest benches/bench_loop.py --benchmark-only        # pytest-benchmark suite
    python benches/bench_loop.py [--steps 25,200,2000]    # ms/step table (median of rounds)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

import pytest

STEPS = (25, 200, 2000)
PEER_MAX_STEPS = 200  # the peers grow with history: 2,000 steps would take minutes per round


# --- foldlog ---------------------------------------------------------------------------------


def foldlog_run(n: int, derive_wire: bool = False) -> Callable[[], Any]:
    """``derive_wire``: serve ``wire_messages()`` from the session's incremental derive cache (the
    two are equal for this well-formed log: checked after every run), isolating the loop's own
    overhead from the cost of building fresh wire dicts for the whole history on every request."""
    import foldlog
    from foldlog.providers import Scripted

    class DeriveWire(foldlog.Session):
        def wire_messages(self) -> list[dict[str, Any]]:
            return list(self.derive_messages())  # type: ignore[arg-type]

    calls = {"n": 0}

    @foldlog.tool(read_only=True)
    async def noop(i: int) -> str:
        """Do nothing."""
        calls["n"] += 1
        return "ok"

    usage = {"prompt_tokens": 10, "completion_tokens": 1}
    replies: list[Any] = [
        {
            "content": "",
            "tool_calls": [{"id": f"c{i}", "name": "noop", "arguments": f'{{"i": {i}}}'}],
            "usage": usage,
        }
        for i in range(n)
    ]
    replies.append({"content": "done", "usage": usage})

    def run() -> Any:
        calls["n"] = 0
        provider = Scripted(replies, keep_requests=False)
        session = (DeriveWire if derive_wire else foldlog.Session)(system="bench")
        agent = foldlog.Agent(provider, [noop], session, foldlog.Options(max_steps=None))
        out = asyncio.run(agent.run("go"))
        assert out == "done" and calls["n"] == n, (out, calls)
        if derive_wire:
            from foldlog.log.frozen import thaw

            assert thaw(session.wire_messages()) == foldlog.Session.wire_messages(session)
        return out

    return run


# --- OpenAI Agents SDK -----------------------------------------------------------------------


def agents_run(n: int) -> Callable[[], Any]:
    from agents import Agent, Runner, function_tool, set_tracing_disabled
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)
    calls = {"n": 0}

    @function_tool
    async def noop(i: int) -> str:
        """Do nothing."""
        calls["n"] += 1
        return "ok"

    class FakeModel(Model):
        def __init__(self) -> None:
            self.step = 0

        async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
            i = self.step
            self.step += 1
            if i < n:
                out: Any = ResponseFunctionToolCall(
                    id=f"fc{i}", call_id=f"c{i}", name="noop", arguments=f'{{"i": {i}}}', type="function_call"
                )
            else:
                out = ResponseOutputMessage(
                    id="m",
                    role="assistant",
                    status="completed",
                    type="message",
                    content=[ResponseOutputText(text="done", type="output_text", annotations=[])],
                )
            return ModelResponse(
                output=[out], usage=Usage(requests=1, input_tokens=10, output_tokens=1), response_id=None
            )

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    def run() -> Any:
        calls["n"] = 0
        agent = Agent(name="bench", instructions="bench", model=FakeModel(), tools=[noop])
        result = asyncio.run(Runner.run(agent, "go", max_turns=n + 5))
        assert result.final_output == "done" and calls["n"] == n
        return result.final_output

    return run


# --- pydantic-ai -----------------------------------------------------------------------------


def pydantic_ai_run(n: int) -> Callable[[], Any]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    calls = {"n": 0}

    def model_fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        i = sum(1 for m in messages if isinstance(m, ModelResponse))
        if i < n:
            return ModelResponse(parts=[ToolCallPart("noop", {"i": i}, tool_call_id=f"c{i}")])
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model_fn), system_prompt="bench")

    @agent.tool_plain
    async def noop(i: int) -> str:
        """Do nothing."""
        calls["n"] += 1
        return "ok"

    def run() -> Any:
        calls["n"] = 0
        result = asyncio.run(agent.run("go", usage_limits=UsageLimits(request_limit=n + 5)))
        assert result.output == "done" and calls["n"] == n
        return result.output

    return run


FRAMEWORKS: dict[str, Callable[[int], Callable[[], Any]]] = {
    "foldlog": foldlog_run,
    "foldlog-derive-wire": lambda n: foldlog_run(n, derive_wire=True),
    "openai-agents": agents_run,
    "pydantic-ai": pydantic_ai_run,
}


# --- pytest-benchmark ------------------------------------------------------------------------


@pytest.mark.parametrize("steps", STEPS)
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_b5_loop_overhead(benchmark: Any, framework: str, steps: int) -> None:
    if not framework.startswith("foldlog") and steps > PEER_MAX_STEPS:
        pytest.skip(f"{framework} at {steps} steps takes minutes per round (grows with history)")
    if not framework.startswith("foldlog"):
        pytest.importorskip({"openai-agents": "agents", "pydantic-ai": "pydantic_ai"}[framework])
    run = FRAMEWORKS[framework](steps)
    run()  # warm-up and answer check
    rounds = 3  # the suite's 30-minute budget on 2 cores
    benchmark.pedantic(run, rounds=rounds, iterations=1)
    benchmark.extra_info["steps"] = steps
    benchmark.extra_info["ms_per_step_median"] = benchmark.stats.stats.median * 1000 / steps


# --- standalone table ------------------------------------------------------------------------


def measure(framework: str, steps: int, rounds: int) -> tuple[float, float, float]:
    run = FRAMEWORKS[framework](steps)
    run()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1000 / steps)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", default=",".join(map(str, STEPS)))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--frameworks", default=",".join(FRAMEWORKS))
    ap.add_argument("--peer-max-steps", type=int, default=PEER_MAX_STEPS)
    args = ap.parse_args()
    print("| framework | steps | ms/step median | min–max |")
    print("|---|---:|---:|---:|")
    results: dict[tuple[str, int], float] = {}
    for steps in map(int, args.steps.split(",")):
        for fw in args.frameworks.split(","):
            if not fw.startswith("foldlog") and steps > args.peer_max_steps:
                print(f"| {fw} | {steps} | not run (minutes per round) | |")
                continue
            med, lo, hi = measure(fw, steps, args.rounds if steps <= 200 else max(1, args.rounds // 2))
            results[(fw, steps)] = med
            print(f"| {fw} | {steps} | {med:.3f} | {lo:.3f}–{hi:.3f} |", flush=True)
    for (fw, steps), med in sorted(results.items()):
        base = results.get(("foldlog", steps))
        if not fw.startswith("foldlog") and base:
            print(f"ratio {fw}/foldlog at {steps} steps: {med / base:.1f}x")


if __name__ == "__main__":
    main()
