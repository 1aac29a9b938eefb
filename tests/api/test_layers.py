"""Layers that point one way (docs/architecture.md): no module imports, at run time, a module of a
layer above its own. Imports under ``if TYPE_CHECKING:`` are annotations only and not counted."""

from __future__ import annotations

import ast
from pathlib import Path

import foldlog

PACKAGE = Path(foldlog.__file__).parent

#: the layers, bottom up; a module may import its own layer and the ones below
RANK = {
    # the shared vocabulary (and the core): importable from everywhere
    "_core": 0,
    "_lazy": 0,
    "errors": 0,
    "events": 0,
    "hooks": 0,
    "tools.host": 0,
    "log.grammar.kinds": 0,  # the event types' names: imported by the stores' byte scanners too
    "log.grammar.types": 0,  # ToolCall, Usage, FinishReason: the conversation's shared types
    "stores": 1,
    "log": 2,
    "providers": 3,
    "tools": 3,
    "compaction": 3,
    "cost": 3,  # prices and spending: reads usage (log.grammar.types) and logs
    "mcp": 3,  # MCP servers as toolsets, beside tools/ (which it uses)
    # foreign transcripts in and sessions out: written through the log's grammar
    # (foldlog.log.grammar), not the agent; exports price with cost/ and write Anthropic blocks
    "interchange": 4,
    "agent": 5,
    "telemetry": 6,  # spans from a session's events: live it watches an Agent (telemetry/live.py)
    "batch": 7,
    "cli": 8,
    "__main__": 9,
    "": 9,  # foldlog/__init__.py: the public API, above everything
}


def _layer(module: str) -> str:
    parts = module.split(".")[1:]
    if parts[:2] == ["tools", "host"]:
        return "tools.host"
    if parts[:2] == ["log", "grammar"] and parts[2:3] in (["kinds"], ["types"]):
        return f"log.grammar.{parts[2]}"
    return parts[0] if parts else ""


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module) -> list[str]:
    typing_only = {
        id(n)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
        for n in ast.walk(node)
    }
    found: list[str] = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("foldlog."):
            found += [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("foldlog.")]
    return found


def test_the_walk_sees_every_layer() -> None:
    layers = {_layer(_module(p)) for p in PACKAGE.rglob("*.py")}
    assert layers <= set(RANK), f"a package folder without a layer: {layers - set(RANK)}"
    assert {"log", "agent", "tools", "compaction", "cli"} <= layers


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = _module(path)
        own = RANK[_layer(module)]
        for target in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
            layer = _layer(target)
            if layer in RANK and RANK[layer] > own:
                upward.append(f"{module} imports {target}")
    assert not upward, "\n".join(upward)
