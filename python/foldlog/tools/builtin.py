"""Opt-in built-in tools rooted in a workspace folder.

Every path is relative to the workspace; absolute paths, ``..`` components and symlinks that
lead outside it are refused. ``bash`` is off unless enabled: it runs with the workspace as its
working directory, a timeout, an output cap, and an environment scrubbed of credentials.

``bash`` reads the command's output as it comes and keeps only its head and tail, so a command
printing 100 MB costs ``output_limit`` bytes of memory, not 100 MB. The command runs in a session
(and process group) of its own: on a timeout or a cancellation the whole group gets SIGTERM, then
SIGKILL after ``TERM_GRACE`` seconds, so children that ignore SIGTERM die too.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import signal
from pathlib import Path
from typing import Annotated

from foldlog.errors import FoldlogError
from foldlog.tools.host import ToolOutcome
from foldlog.tools.output import HeadTail, decode_output
from foldlog.tools.registry import Tool, make_tool

_SECRET = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|PRIVATE_KEY|ACCESS_KEY)", re.I)
MAX_READ_BYTES = 256 * 1024
MAX_LIST = 1000
MAX_MATCHES = 200
TERM_GRACE = 1.0  # seconds between SIGTERM and SIGKILL for a command's process group
READ_SIZE = 1 << 16


class WorkspaceError(FoldlogError, ValueError):
    """A path that would leave the workspace (or does not fit it)."""


class Workspace:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve(strict=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"workspace {self.root} is not a directory")

    def resolve(self, path: str, *, must_exist: bool = True) -> Path:
        if not path or path.strip() == "":
            path = "."
        p = Path(path)
        if p.is_absolute() or path.startswith("~"):
            raise WorkspaceError(f"path {path!r} is absolute; use a path relative to the workspace")
        if any(part == ".." for part in p.parts):
            raise WorkspaceError(f"path {path!r} contains '..'; paths must stay inside the workspace")
        full = (self.root / p).resolve(strict=False)
        if full != self.root and self.root not in full.parents:
            raise WorkspaceError(f"path {path!r} leads outside the workspace (through a symlink)")
        if must_exist and not full.exists():
            raise FileNotFoundError(f"{path}: no such file or directory")
        return full

    def rel(self, p: Path) -> str:
        return str(p.relative_to(self.root)) if p != self.root else "."


def builtin_tools(
    workspace: str | os.PathLike[str],
    *,
    write: bool = False,
    bash: bool = False,
    bash_timeout: float = 120.0,
    output_limit: int = 32768,
) -> list[Tool]:
    """``read_file``, ``list_dir``, ``grep``; plus ``write_file``/``edit_file`` when ``write``; plus
    ``bash`` when ``bash``."""
    ws = Workspace(workspace)

    def read_file(
        path: Annotated[str, "File path relative to the workspace"],
        offset: Annotated[int, "First line to return (1-based)"] = 1,
        limit: Annotated[int | None, "Maximum number of lines"] = None,
    ) -> ToolOutcome:
        """Read a text file from the workspace, optionally a range of lines."""
        full = ws.resolve(path)
        if full.is_dir():
            raise IsADirectoryError(f"{path} is a directory; use list_dir")
        with open(full, "rb") as f:
            data = f.read(MAX_READ_BYTES + 1)
        text, replaced = decode_output(data[:MAX_READ_BYTES])
        lines = text.splitlines(keepends=True)
        start = max(offset, 1) - 1
        end = len(lines) if limit is None else start + max(limit, 0)
        out = "".join(lines[start:end])
        if len(data) > MAX_READ_BYTES:
            out += f"\n[file truncated at {MAX_READ_BYTES} bytes; use offset/limit]"
        return ToolOutcome(out, meta={"utf8Replaced": replaced} if replaced else {})

    def list_dir(path: Annotated[str, "Directory relative to the workspace"] = ".") -> str:
        """List a workspace directory (directories end with '/')."""
        full = ws.resolve(path)
        if not full.is_dir():
            raise NotADirectoryError(f"{path} is not a directory")
        names = sorted(e.name + ("/" if e.is_dir() else "") for e in os.scandir(full))
        if len(names) > MAX_LIST:
            return "\n".join(names[:MAX_LIST]) + f"\n[{len(names) - MAX_LIST} more entries not shown]"
        return "\n".join(names)

    def grep(
        pattern: Annotated[str, "Python regular expression"],
        path: Annotated[str, "File or directory relative to the workspace"] = ".",
        glob: Annotated[str | None, "Only files whose name matches this glob, e.g. *.py"] = None,
    ) -> str:
        """Search files under a path for a regular expression; lines as path:line:text."""
        rx = re.compile(pattern)
        full = ws.resolve(path)
        files = [full] if full.is_file() else sorted(_walk(full))
        hits: list[str] = []
        for f in files:
            if glob and not fnmatch.fnmatch(f.name, glob):
                continue
            try:
                with open(f, encoding="utf-8", errors="replace") as fh:
                    for n, line in enumerate(fh, 1):
                        if rx.search(line):
                            hits.append(f"{ws.rel(f)}:{n}:{line.rstrip()}")
                            if len(hits) >= MAX_MATCHES:
                                return "\n".join(hits) + f"\n[stopped after {MAX_MATCHES} matches]"
            except OSError:
                continue
        return "\n".join(hits) if hits else "no matches"

    def _walk(d: Path) -> list[Path]:
        out: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(d):  # os.walk does not follow symlinked dirs
            dirnames[:] = [n for n in dirnames if not n.startswith(".")]
            for n in filenames:
                p = Path(dirpath) / n
                if p.is_symlink():
                    try:
                        ws.resolve(ws.rel(p))
                    except (WorkspaceError, FileNotFoundError):
                        continue
                out.append(p)
        return out

    def write_file(
        path: Annotated[str, "File path relative to the workspace"],
        content: Annotated[str, "The complete new content"],
    ) -> str:
        """Create or overwrite a file in the workspace (parent directories are created)."""
        full = ws.resolve(path, must_exist=False)
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode('utf-8'))} bytes to {ws.rel(full)}"

    def edit_file(
        path: Annotated[str, "File path relative to the workspace"],
        old: Annotated[str, "Exact text to replace (must occur exactly once unless replace_all)"],
        new: Annotated[str, "Replacement text"],
        replace_all: Annotated[bool, "Replace every occurrence"] = False,
    ) -> str:
        """Replace exact text in a workspace file."""
        full = ws.resolve(path)
        text = full.read_text(encoding="utf-8")
        n = text.count(old) if old else 0
        if n == 0:
            raise ValueError(f"the text to replace was not found in {path}")
        if n > 1 and not replace_all:
            raise ValueError(
                f"the text to replace occurs {n} times in {path}; add context or set replace_all"
            )
        full.write_text(
            text.replace(old, new) if replace_all else text.replace(old, new, 1), encoding="utf-8"
        )
        return f"replaced {n if replace_all else 1} occurrence(s) in {ws.rel(full)}"

    async def bash_(
        command: Annotated[str, "Shell command, run with the workspace as working directory"],
        timeout: Annotated[float | None, "Seconds before the command is killed"] = None,
    ) -> ToolOutcome:
        """Run a shell command in the workspace; returns exit code and combined output."""
        limit = min(timeout, bash_timeout) if timeout else bash_timeout
        kept = HeadTail(output_limit)
        proc = await _spawn(command, ws.root, kept)
        timed_out = False
        try:
            async with asyncio.timeout(limit):
                await _drain(proc, kept)
        except TimeoutError:
            timed_out = True
            await _stop(proc, kept)
        except BaseException:  # cancelled (the runner's timeout, Agent.cancel): leave nothing running
            await _stop(proc, kept)
            raise
        text, omitted, replaced = kept.render()
        meta: dict[str, int] = {}
        if omitted:
            meta["omittedBytes"] = omitted
        if replaced:
            meta["utf8Replaced"] = replaced
        if timed_out:
            return ToolOutcome(
                f"error: command timed out after {limit:g}s; its process group was killed. "
                f"Output until then:\n{text}",
                True,
                meta,
            )
        return ToolOutcome(f"exit code {proc.returncode}\n{text}", meta=meta)

    tools = [
        make_tool(read_file, read_only=True),
        make_tool(list_dir, read_only=True),
        make_tool(grep, read_only=True),
    ]
    if write:
        tools += [make_tool(write_file), make_tool(edit_file)]
    if bash:
        tools.append(make_tool(bash_, name="bash"))
    return tools


def scrubbed_env() -> dict[str, str]:
    """The current environment without anything that looks like a credential."""
    return {k: v for k, v in os.environ.items() if not _SECRET.search(k)}


async def _spawn(command: str, cwd: Path, kept: HeadTail) -> asyncio.subprocess.Process:
    """Start the command in a session of its own; a cancellation that lands while it is being
    started (the shell may already run) waits for its handle and stops it before going on."""
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_shell(
            command,
            cwd=cwd,
            env=scrubbed_env(),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
    )
    try:
        return await asyncio.shield(spawn)
    except asyncio.CancelledError:
        try:
            proc = await spawn
        except Exception:  # it failed to start: nothing to stop
            raise asyncio.CancelledError from None
        await _stop(proc, kept)
        raise


async def _drain(proc: asyncio.subprocess.Process, kept: HeadTail) -> None:
    """Read the command's output to its end (keeping only the head and tail), then reap the shell.

    asyncio's ``wait()`` returns only once the pipe is closed too, that is when every process
    holding it (background children included) has exited or closed it.
    """
    stdout = proc.stdout
    assert stdout is not None
    while piece := await stdout.read(READ_SIZE):
        kept.feed(piece)
    await proc.wait()


async def _stop(proc: asyncio.subprocess.Process, kept: HeadTail) -> None:
    """SIGTERM the command's process group, SIGKILL it after ``TERM_GRACE`` s; read what it wrote."""
    _signal_group(proc, signal.SIGTERM)
    try:
        await asyncio.wait_for(_drain(proc, kept), TERM_GRACE)
    except TimeoutError:
        pass
    finally:
        # always: the shell may have exited on SIGTERM while a child that ignores it lives on
        _signal_group(proc, signal.SIGKILL)
    try:
        # the group is dead, so the pipe ends at once, unless a process that left the group
        # (setsid, a daemon) still holds it
        await asyncio.wait_for(_drain(proc, kept), TERM_GRACE)
    except TimeoutError:
        # asyncio has no public way to close a subprocess's pipes; closing the transport lets
        # the exited shell be reaped now instead of when that process goes away
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), TERM_GRACE)


def _signal_group(proc: asyncio.subprocess.Process, sig: signal.Signals) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session made the shell's pid the group id
    except (ProcessLookupError, PermissionError):
        pass


__all__ = ["Workspace", "WorkspaceError", "builtin_tools", "scrubbed_env"]
