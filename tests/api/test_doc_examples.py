"""The MCP and typed-output examples of the README and their docs pages run as written (offline:
a scripted model and the real mcp-server-time from the test setup)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = [
    (doc, i, block)
    for doc in ("README.md", "docs/mcp.md", "docs/output.md")
    for i, block in enumerate(re.findall(r"```python\n(.*?)```", (REPO / doc).read_text(), re.S))
    if "MCPServer" in block or "output_type" in block
]


def test_the_examples_are_found() -> None:
    assert {doc for doc, _, _ in EXAMPLES} == {"README.md", "docs/mcp.md", "docs/output.md"}


@pytest.mark.parametrize(("doc", "index", "code"), EXAMPLES, ids=[f"{d}#{i}" for d, i, _ in EXAMPLES])
def test_an_example_runs_as_written(doc: str, index: int, code: str, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{doc} example {index} failed:\n{proc.stderr[-3000:]}"
    assert proc.stdout.strip()
