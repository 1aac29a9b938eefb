"""The public import paths: what users import keeps working after the package was regrouped."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import foldlog


@pytest.mark.parametrize("name", sorted(foldlog.__all__))
def test_every_public_name_of_foldlog_resolves(name: str) -> None:
    assert getattr(foldlog, name) is not None


@pytest.mark.parametrize(
    ("module", "names"),
    [
        ("foldlog.hooks", ["Hooks", "ToolContext", "ToolOutcome", "allow", "deny", "ask", "enter", "reject"]),
        (
            "foldlog.hooks",
            ["accept", "replace", "block", "PreStepContext", "RequestContext", "StreamContext"],
        ),
        ("foldlog.events", ["Text", "ToolDispatch", "ToolResult", "Usage", "Notice", "TurnDone"]),
        ("foldlog.agent", ["Agent"]),
        (
            "foldlog.compaction",
            ["Compactor", "CompactionResult", "CompactionPreview", "unfinished_compaction"],
        ),
        ("foldlog.providers", ["Scripted", "OpenAICompatible", "DeepSeek", "collect", "Completion"]),
        ("foldlog.stores", ["FileStore", "SessionInfo", "SessionStore", "StoreWriter"]),
        ("foldlog.tools", ["tool", "Tool", "ToolRegistry", "SchemaError"]),
        ("foldlog.interchange", ["convert", "write_conversation", "FORMATS"]),
        ("foldlog.interchange.exports", ["EXPORT_FORMATS", "export", "suffix"]),
        ("foldlog.batch", ["run_batch", "BatchReport", "make_grid", "GridPoint", "read_table", "JOBS"]),
    ],
)
def test_the_public_module_paths_export_their_names(module: str, names: list[str]) -> None:
    mod = importlib.import_module(module)
    for name in names:
        assert getattr(mod, name) is not None, f"{module}.{name}"


def test_hook_tool_types_are_the_tools_layer_ones() -> None:
    from foldlog.hooks import ToolContext, ToolOutcome
    from foldlog.tools import host

    assert ToolContext is host.ToolContext and ToolOutcome is host.ToolOutcome


def test_collect_stays_the_function_after_its_module_is_imported() -> None:
    code = (
        "import foldlog.providers.collect, foldlog.providers as p, inspect; "
        "print(inspect.isfunction(p.collect))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"
