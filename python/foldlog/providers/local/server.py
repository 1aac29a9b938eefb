"""llama-cpp-python's OpenAI-compatible server as a child process on loopback, for clients that want
an HTTP endpoint to the local model (the end-to-end tests of
:class:`~foldlog.providers.http.openai_compat.OpenAICompatible` use it). The in-process provider is
:class:`~foldlog.providers.local.provider.LocalLlama`."""

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
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import IO, Any

from foldlog.errors import ProviderError
from foldlog.providers.local.provider import INSTALL_HINT, MODEL_ALIAS

_SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)


def missing_server_modules() -> list[str]:
    """What :class:`LlamaServer` needs (llama-cpp-python's ``server`` extra) and is missing."""
    return [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port: int = s.getsockname()[1]
        return port


@dataclass(eq=False)
class LlamaServer:
    """One ``python -m llama_cpp.server`` child process on loopback (``port`` None: a free one)."""

    model_path: Path
    _: KW_ONLY
    n_ctx: int = 8192
    host: str = "127.0.0.1"
    port: int | None = None
    # None: the chat template in the GGUF's metadata (e.g. the optional Qwen2.5-Coder reader's
    # ChatML, scripts/fetch-reader-model.sh)
    chat_format: str | None = "chatml-function-calling"
    model_alias: str = MODEL_ALIAS
    n_threads: int | None = None
    startup_timeout: float = 120.0
    extra_args: Sequence[str] = ()
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    startup_seconds: float | None = field(default=None, init=False)
    _log: IO[bytes] | None = field(default=None, init=False, repr=False)
    _finalizer: weakref.finalize[Any, Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self.model_path = Path(self.model_path)  # a str is accepted too
        self.extra_args = list(self.extra_args)

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
            "--model_alias", self.model_alias,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
        ]  # fmt: skip
        if self.chat_format is not None:
            cmd += ["--chat_format", self.chat_format]
        # llama.cpp's default (half the cores) measured faster here than all cores on a busy
        # two-core machine: its OpenMP threads spin, and oversubscribed spinning is slow
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        return cmd + list(self.extra_args)

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
        missing = missing_server_modules()
        if missing:
            raise ProviderError(f"the llama.cpp server needs {', '.join(missing)}: {INSTALL_HINT}")
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
