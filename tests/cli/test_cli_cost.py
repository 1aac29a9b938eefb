"""Costs in the CLI: the run's usage line, `foldlog sessions`, `log inspect` and the chat's
``/cost``, for a model genai-prices knows (gpt-4o-mini: 0.15 USD per 1M input tokens, 0.075
cached, 0.60 output), served by a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.cli_testlib import run_cli
from tests.support.chat_server import ChatServer

USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 30,
    "prompt_cache_hit_tokens": 900,
    "prompt_cache_miss_tokens": 300,
}
# by hand: 300 * 0.15 + 900 * 0.075 + 30 * 0.60 per 1M tokens
PER_REQUEST = (300 * 0.15 + 900 * 0.075 + 30 * 0.60) / 1e6


@pytest.fixture()
def server() -> Iterator[ChatServer]:
    fake = ChatServer(
        [
            {"content": "", "tool_calls": [("call_1", "list_dir", "{}")], "usage": USAGE},
            {"content": "Nothing much here.", "usage": USAGE},
        ]
    ).start()
    try:
        yield fake
    finally:
        fake.close()


def _args(server: ChatServer, workspace: Path) -> list[str]:
    return ["--provider", "openai-compatible", "--base-url", server.base_url, "--model", "gpt-4o-mini",
            "--workspace", str(workspace)]  # fmt: skip


def test_run_sessions_and_inspect_show_the_cost(tmp_path: Path, server: ChatServer) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_cli("run", "what is here?", *_args(server, ws), home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert f"cost {2 * PER_REQUEST:.6f} USD" in proc.stderr
    listing = json.loads(run_cli("sessions", "--json", home=tmp_path).stdout)
    (row,) = listing["sessions"]
    assert row["cost"]["cost"] == pytest.approx(2 * PER_REQUEST) and row["cost"]["requests"] == 2
    assert row["cost"]["byKind"]["cacheRead"] == pytest.approx(2 * 900 * 0.075 / 1e6)
    table = run_cli("sessions", home=tmp_path).stdout
    assert f"{2 * PER_REQUEST:.6f} USD" in table
    report = json.loads(run_cli("log", "inspect", row["id"], "--json", home=tmp_path).stdout)
    assert report["cost"]["cost"] == pytest.approx(2 * PER_REQUEST)
    assert report["cost"]["turns"]["1"]["requests"] == 2 and report["cost"]["currency"] == "USD"
    text = run_cli("log", "inspect", row["id"], home=tmp_path).stdout
    assert f"cost  {2 * PER_REQUEST:.6f} USD  (2 request(s)" in text
    assert "turn 1:" in text


def test_chat_cost_command(tmp_path: Path, server: ChatServer) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_cli("chat", *_args(server, ws), home=tmp_path, input="what is here?\n/cost\n/quit\n")
    assert proc.returncode == 0, proc.stderr
    assert (
        f"session  {2 * PER_REQUEST:.6f} USD  (2 request(s), 2400 in / 60 out tokens, 1800 cached)"
        in proc.stdout
    )
    assert "turn 1:" in proc.stdout


def test_run_token_budget_flag(tmp_path: Path, server: ChatServer) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_cli("run", "what is here?", "--token-budget", "1000", *_args(server, ws), home=tmp_path)
    assert proc.returncode == 1  # the first request (1230 tokens) passed the budget: no second one
    assert "BudgetExceeded" in proc.stderr and "token_budget 1000" in proc.stderr
    assert len(server.requests) == 1
