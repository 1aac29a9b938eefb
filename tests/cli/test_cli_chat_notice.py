"""``foldlog chat`` on the offline model says what that model is for before the first question."""

from __future__ import annotations

from pathlib import Path

from tests.cli.cli_testlib import fake_agent_args, run_cli
from tests.support.chat_server import ChatServer


def _flat(text: str) -> str:
    """The output with the console's line wrapping undone."""
    return " ".join(text.split())


def test_chat_on_the_offline_model_names_its_limits(tmp_path: Path) -> None:
    """No model is loaded to say it: the notice comes before any request (here: none, /quit)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = run_cli("chat", "--provider", "local", "--workspace", str(ws), home=tmp_path, input="/quit\n")
    assert proc.returncode == 0, proc.stderr
    out = _flat(proc.stdout)
    assert "Gemma 3 270M" in out and "pretrained" in out, out
    assert "demo" in out and "simple" in out, out  # what it is for
    assert "DEEPSEEK_API_KEY" in out and "--provider deepseek" in out, out  # what to use for real work
    # once, before the prompt's first line of help
    assert out.count("Gemma 3 270M") == 1 and out.index("Gemma 3 270M") < out.index("/help for commands")


def test_chat_on_a_hosted_model_prints_no_such_notice(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    server = ChatServer([]).start()
    try:
        proc = run_cli("chat", *fake_agent_args(server, ws), home=tmp_path, input="/quit\n")
    finally:
        server.close()
    assert proc.returncode == 0, proc.stderr
    assert "270M" not in proc.stdout and "DEEPSEEK_API_KEY" not in proc.stdout, proc.stdout
