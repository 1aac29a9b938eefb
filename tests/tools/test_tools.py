from __future__ import annotations

import asyncio
import enum
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Optional, TypedDict

import pytest

from foldlog import Agent, Options, Session, Tool, ToolRegistry, tool
from foldlog.hooks import ToolContext
from foldlog.log.grammar.types import ToolCall
from foldlog.providers import Scripted
from foldlog.tools.host import ToolLimits
from foldlog.tools.runner import ToolRunner, cap_output
from foldlog.tools.schema import SchemaError, validate
from tests.agent.agent_helpers import call, of_type, reply


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Point:
    x: int
    y: int = 0


class Box(TypedDict):
    name: str
    size: float


def test_schema_from_type_hints() -> None:
    @tool(read_only=True, name="shape_tool")
    def shape(
        label: Annotated[str, "What to call it"],
        at: Point,
        box: Box,
        color: Color = Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        tags: list[str] | None = None,
        weight: Optional[float] = None,  # noqa: UP045 - the Optional spelling is supported too
        ctx: ToolContext | None = None,
    ) -> str:
        """Describe a shape.

        Args:
            at: Where it sits.
        """
        return ""

    assert isinstance(shape, Tool) and shape.name == "shape_tool" and shape.read_only
    assert shape.description == "Describe a shape."
    params = shape.parameters
    assert params["required"] == ["label", "at", "box"]
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert "ctx" not in props
    assert props["label"] == {"type": "string", "description": "What to call it"}
    assert props["at"]["description"] == "Where it sits."
    assert props["at"]["properties"] == {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}}
    assert props["at"]["required"] == ["x"]
    assert props["box"]["properties"] == {"name": {"type": "string"}, "size": {"type": "number"}}
    assert props["box"]["required"] == ["name", "size"]
    assert props["color"] == {"enum": ["red", "blue"], "type": "string", "default": "red"}
    assert props["mode"] == {"enum": ["fast", "slow"], "type": "string", "default": "fast"}
    assert props["tags"]["anyOf"] == [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    assert props["weight"]["anyOf"] == [{"type": "number"}, {"type": "null"}]


def test_schema_rejects_untyped_and_unsupported() -> None:
    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(SchemaError, match="needs a type hint"):
        tool(untyped)

    def bad(x: dict[int, str]) -> str:
        return ""

    with pytest.raises(SchemaError, match="dict keys must be str"):
        tool(bad)


def test_validator_messages() -> None:
    schema = tool(lambda_point).parameters
    assert validate({"p": {"x": 1}, "n": 2}, schema) == []
    errs = validate({"p": {"x": "a", "z": 1}, "n": True, "extra": 1}, schema)
    assert "$.p.x: expected integer, got string" in errs
    assert "$.p: unexpected property 'z'" in errs
    assert "$.n: expected integer, got boolean" in errs
    assert "$: unexpected property 'extra'" in errs
    assert validate({}, schema) == ["$: missing required property 'p'", "$: missing required property 'n'"]


def lambda_point(p: Point, n: int) -> str:
    return f"{p!r} {n}"


def test_arguments_converted_to_annotated_types(session: Session) -> None:
    got: list[Any] = []

    @tool
    def take(p: Point, c: Color, xs: tuple[int, ...] = (), f: float = 1.0) -> str:
        got.append((p, c, xs, f))
        return "ok"

    p = Scripted(
        [reply("", call("take", {"p": {"x": 1, "y": 2}, "c": "blue", "xs": [1, 2], "f": 3})), reply("k")]
    )
    Agent(p, [take], session).run_sync("x")
    assert got == [(Point(1, 2), Color.BLUE, (1, 2), 3.0)]
    assert isinstance(got[0][3], float)


def test_registry_sorted_and_byte_stable() -> None:
    @tool
    def zeta(a: int) -> int:
        return a

    @tool
    def alpha(b: str) -> str:
        return b

    r1 = ToolRegistry([zeta, alpha])
    r2 = ToolRegistry([alpha, zeta])
    assert [s["function"]["name"] for s in r1.schemas()] == ["alpha", "zeta"]
    assert r1.schemas_json() == r2.schemas_json()
    assert r1.schemas() is r1.schemas()  # cached: the same objects every request
    with pytest.raises(ValueError, match="already registered"):
        r1.register(alpha)
    assert r1.without("zeta").names == ["alpha"]
    with pytest.raises(ValueError, match="tool name"):
        tool(name="bad name")(lambda_point)


def test_cap_output_head_tail_on_char_boundaries() -> None:
    text = "é" * 40000  # 2 bytes each
    out = cap_output(text, 1000)
    assert out.startswith("é" * 250) and out.endswith("é" * 250)
    assert "bytes of tool output omitted" in out
    assert "\ufffd" not in out
    assert cap_output("short", 1000) == "short"
    mixed = "a" + "😀" * 1000
    capped = cap_output(mixed, 101)
    capped.encode("utf-8")  # valid text
    head = capped.split("\n\n[")[0]
    assert len(head.encode("utf-8")) <= 50


def test_output_limit_applied_in_loop(session: Session) -> None:
    @tool(read_only=True)
    def big() -> str:
        return "x" * 50_000 + "END"

    p = Scripted([reply("", call("big")), reply("ok")])
    Agent(p, [big], session, Options(tool_output_limit=1024)).run_sync("x")
    content = of_type(session, "tool/result")[0]["data"]["message"]["content"]
    assert content.startswith("x" * 512) and content.endswith("END") and len(content) < 1200


def _calls(*names: str) -> list[ToolCall]:
    return [ToolCall(f"c{i}", n, "{}") for i, n in enumerate(names)]


def test_read_only_calls_overlap_and_results_keep_call_order() -> None:
    started: list[str] = []
    both = asyncio.Event()

    @tool(read_only=True)
    async def slow() -> str:
        started.append("slow")
        # finishes only once `fast` has started: proves the two run at the same time
        await asyncio.wait_for(both.wait(), 5)
        return "slow done"

    @tool(read_only=True)
    async def fast() -> str:
        started.append("fast")
        both.set()
        return "fast done"

    runner = ToolRunner(
        ToolRegistry([slow, fast]), None, None, ToolLimits(max_parallel=8, output_limit=1000, timeout=None)
    )
    results = asyncio.run(runner.run_batch(_calls("slow", "fast")))
    assert [r.content for r in results] == ["slow done", "fast done"]
    assert started == ["slow", "fast"]


def test_parallelism_is_capped() -> None:
    active = 0
    peak = 0

    @tool(read_only=True)
    async def probe() -> str:
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        for _ in range(3):
            await asyncio.sleep(0)
        active -= 1
        return "ok"

    runner = ToolRunner(
        ToolRegistry([probe]), None, None, ToolLimits(max_parallel=3, output_limit=1000, timeout=None)
    )
    asyncio.run(runner.run_batch(_calls(*["probe"] * 10)))
    assert peak == 3


def test_writing_calls_run_one_at_a_time_in_order() -> None:
    log: list[str] = []

    @tool(read_only=True)
    async def look() -> str:
        log.append("look>")
        await asyncio.sleep(0)
        log.append("<look")
        return ""

    @tool
    async def write() -> str:
        log.append("write>")
        await asyncio.sleep(0)
        log.append("<write")
        return ""

    runner = ToolRunner(
        ToolRegistry([look, write]), None, None, ToolLimits(max_parallel=8, output_limit=1000, timeout=None)
    )
    asyncio.run(runner.run_batch(_calls("look", "look", "write", "look")))
    assert log == ["look>", "look>", "<look", "<look", "write>", "<write", "look>", "<look"]


def test_exceptions_and_timeouts_become_error_results() -> None:
    @tool
    def crash() -> str:
        raise FileNotFoundError("no such file: x.txt")

    @tool
    async def sleepy() -> str:
        await asyncio.sleep(10)
        return "late"

    runner = ToolRunner(
        ToolRegistry([crash, sleepy]), None, None, ToolLimits(max_parallel=8, output_limit=1000, timeout=0.05)
    )
    results = asyncio.run(runner.run_batch(_calls("crash", "sleepy")))
    assert results[0].is_error and results[0].content == "error: FileNotFoundError: no such file: x.txt"
    assert results[1].is_error and "timed out after 0.05s" in results[1].content


def test_sync_tools_and_non_string_results() -> None:
    @tool
    def data() -> dict[str, Any]:
        return {"a": [1, 2]}

    runner = ToolRunner(
        ToolRegistry([data]), None, None, ToolLimits(max_parallel=8, output_limit=1000, timeout=None)
    )
    [r] = asyncio.run(runner.run_batch(_calls("data")))
    assert isinstance(r.content, str)
    assert json.loads(r.content) == {"a": [1, 2]} and not r.is_error


def test_loop_guard_after_three_identical_failing_batches(session: Session) -> None:
    @tool
    def fail(path: str) -> str:
        raise OSError(f"cannot open {path}")

    same = [reply("", call("fail", {"path": "a"}, f"c{i}")) for i in range(4)]
    p = Scripted([*same, reply("giving up")])
    Agent(p, [fail], session).run_sync("x")
    contents = [e["data"]["message"]["content"] for e in of_type(session, "tool/result")]
    assert not any("[loop guard]" in c for c in contents[:2])
    assert contents[2].startswith("[loop guard]") and "change approach" in contents[2].splitlines()[0]
    assert contents[3].startswith("[loop guard]")


def test_loop_guard_resets_on_success() -> None:
    flaky_ok = {"ok": False}

    @tool
    def flaky() -> str:
        if flaky_ok["ok"]:
            return "fine"
        raise RuntimeError("down")

    runner = ToolRunner(
        ToolRegistry([flaky]), None, None, ToolLimits(max_parallel=8, output_limit=1000, timeout=None)
    )

    def batch() -> str:
        [r] = asyncio.run(runner.run_batch(_calls("flaky")))
        assert isinstance(r.content, str)
        return r.content

    batch(), batch()
    flaky_ok["ok"] = True
    batch()
    flaky_ok["ok"] = False
    assert "[loop guard]" not in batch() and "[loop guard]" not in batch()
    assert "[loop guard]" in batch()


def test_tool_context_progress_reaches_sink(session: Session) -> None:
    from foldlog.events import ToolProgress

    @tool
    def work(ctx: ToolContext, n: int) -> str:
        ctx.progress(f"step {n}")
        return "ok"

    events: list[Any] = []
    p = Scripted([reply("", call("work", {"n": 7}, "w1")), reply("done")])
    Agent(p, [work], session, sink=events.append).run_sync("x")
    assert ToolProgress("w1", "work", "step 7") in events
