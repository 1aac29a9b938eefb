from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from foldlog import ToolRegistry
from foldlog.log.grammar.types import ToolCall
from foldlog.tools.builtin import Workspace, WorkspaceError, builtin_tools, scrubbed_env
from foldlog.tools.host import ToolLimits
from foldlog.tools.runner import ToolRunner


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def f():\n    return 1\n# TODO fix\n")
    (root / "README.md").write_text("hello\nworld\n")
    (tmp_path / "outside.txt").write_text("secret")
    os.symlink(tmp_path / "outside.txt", root / "link.txt")
    os.symlink(tmp_path, root / "up")
    return root


def run(root: Path, name: str, args: str, **opts: bool) -> tuple[str, bool]:
    runner = ToolRunner(
        ToolRegistry(builtin_tools(root, **opts)),
        None,
        None,
        ToolLimits(max_parallel=8, output_limit=4096, timeout=None),
    )
    [r] = asyncio.run(runner.run_batch([ToolCall("c", name, args)]))
    assert isinstance(r.content, str)
    return r.content, r.is_error


def test_default_set_is_read_only(ws: Path) -> None:
    tools = builtin_tools(ws)
    assert sorted(t.name for t in tools) == ["grep", "list_dir", "read_file"]
    assert all(t.read_only for t in tools)
    names = sorted(t.name for t in builtin_tools(ws, write=True, bash=True))
    assert names == ["bash", "edit_file", "grep", "list_dir", "read_file", "write_file"]


def test_read_list_grep(ws: Path) -> None:
    assert run(ws, "read_file", '{"path": "README.md"}') == ("hello\nworld\n", False)
    assert run(ws, "read_file", '{"path": "src/a.py", "offset": 2, "limit": 1}') == ("    return 1\n", False)
    listing, _ = run(ws, "list_dir", "{}")
    assert listing.splitlines() == ["README.md", "link.txt", "src/", "up/"]
    hits, _ = run(ws, "grep", '{"pattern": "TODO|return", "glob": "*.py"}')
    assert hits.splitlines() == ["src/a.py:2:    return 1", "src/a.py:3:# TODO fix"]
    assert "secret" not in run(ws, "grep", '{"pattern": "secret"}')[0]


@pytest.mark.parametrize(
    "path", ["../outside.txt", "/etc/passwd", "link.txt", "up/outside.txt", "src/../../x"]
)
def test_escapes_are_refused(ws: Path, path: str) -> None:
    content, is_error = run(ws, "read_file", f'{{"path": "{path}"}}')
    assert is_error and "WorkspaceError" in content
    content, is_error = run(ws, "write_file", f'{{"path": "{path}", "content": "x"}}', write=True)
    assert is_error and "WorkspaceError" in content
    assert (ws.parent / "outside.txt").read_text() == "secret"


def test_workspace_resolve() -> None:
    w = Workspace(".")
    with pytest.raises(WorkspaceError, match="absolute"):
        w.resolve("/tmp")
    with pytest.raises(WorkspaceError, match=r"'\.\.'"):
        w.resolve("a/../b")


def test_write_and_edit(ws: Path) -> None:
    assert run(ws, "write_file", '{"path": "new/b.txt", "content": "one two two"}', write=True)[1] is False
    assert (ws / "new" / "b.txt").read_text() == "one two two"
    content, err = run(ws, "edit_file", '{"path": "new/b.txt", "old": "two", "new": "2"}', write=True)
    assert err and "occurs 2 times" in content
    assert run(ws, "edit_file", '{"path": "new/b.txt", "old": "one", "new": "1"}', write=True)[1] is False
    assert (
        run(
            ws,
            "edit_file",
            '{"path": "new/b.txt", "old": "two", "new": "2", "replace_all": true}',
            write=True,
        )[1]
        is False
    )
    assert (ws / "new" / "b.txt").read_text() == "1 2 2"
    content, err = run(ws, "edit_file", '{"path": "new/b.txt", "old": "zzz", "new": ""}', write=True)
    assert err and "not found" in content


def test_bash_cwd_env_timeout_cap(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("FOLDLOG_VISIBLE", "yes")
    assert "DEEPSEEK_API_KEY" not in scrubbed_env()
    out, err = run(ws, "bash", '{"command": "pwd; env"}', bash=True)
    assert not err and out.startswith("exit code 0\n")
    assert str(ws.resolve()) in out and "FOLDLOG_VISIBLE=yes" in out and "sk-should-not-leak" not in out
    out, err = run(ws, "bash", '{"command": "sleep 5", "timeout": 0.2}', bash=True)
    assert err and "timed out" in out
    out, _ = run(ws, "bash", '{"command": "head -c 20000 /dev/zero | tr \'\\\\0\' x; echo END"}', bash=True)
    assert "bytes of tool output omitted" in out and out.rstrip().endswith("END")
    assert run(ws, "bash", '{"command": "exit 3"}', bash=True)[0].startswith("exit code 3")
    assert "unknown tool" in run(ws, "bash", '{"command": "ls"}')[0]
