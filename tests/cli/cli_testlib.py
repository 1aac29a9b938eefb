"""Helpers for the CLI and interchange tests: the corpus, a structural checker, running the CLI.

A plain module (not conftest.py) so its name cannot clash with other test folders' conftests;
the fixtures are re-exported by this folder's conftest.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.support.http_server import LoopbackServer

REPO = Path(__file__).resolve().parents[2]


def shared_dir() -> Path:
    return Path(os.environ.get("FOLDLOG_SHARED") or REPO.parent / "shared")


@pytest.fixture(scope="session")
def corpus() -> Path:
    path = shared_dir() / "corpus"
    if not path.is_dir():
        pytest.fail(f"corpus not found at {path} (set FOLDLOG_SHARED)")
    return path


@pytest.fixture(scope="session")
def seed_v0_lines() -> list[str]:
    """The version-0 example log embedded in seed 003, line by line."""
    seeds = sorted((shared_dir() / "seeds").glob("003_*.txt"))
    assert seeds, "seed 003 not found"
    lines = [ln for ln in seeds[0].read_text(encoding="utf-8").splitlines() if ln.startswith('{"type":')]
    assert len(lines) == 10
    return lines


def check_well_formed(events: list[Any]) -> None:
    """Everything log-format.md asks of a converted event sequence (seqs are local indices)."""
    surface: list[int] = []
    calls: dict[str, int] = {}  # call id -> tool/call seq
    offered: set[str] = set()  # ids in assistant tool_calls
    turn_open = step_open = False
    for seq, ev in enumerate(events):
        assert json.loads(json.dumps(ev.data)) == ev.data
        sources = ev.source_event_seqs or []
        assert len(set(sources)) == len(sources) and all(0 <= s < seq for s in sources), (seq, sources)
        t = ev.type
        if t == "turn/start":
            assert not turn_open
            turn_open = True
        elif t == "turn/end":
            assert turn_open and not step_open
            turn_open = False
            assert isinstance(ev.data["reason"]["kind"], str)
        elif t == "step/start":
            assert turn_open and not step_open
            step_open = True
        elif t == "step/end":
            assert step_open
            step_open = False
        elif t == "assistant/message":
            assert step_open
            for call in ev.data["message"].get("tool_calls", []):
                assert call["id"] not in offered, f"call id {call['id']} reused"
                offered.add(call["id"])
        elif t == "tool/call":
            assert ev.data["callId"] in offered
            calls[ev.data["callId"]] = seq
        elif t == "tool/result":
            msg = ev.data["message"]
            assert set(msg) >= {"role", "toolCallId", "toolName", "content", "isError"}
            if sources:
                assert sources == [calls[msg["toolCallId"]]]
        if ev.surface_op is None:
            assert t not in ("user/message", "assistant/message", "tool/result", "system/message"), t
        elif ev.surface_op == "append":
            surface.append(seq)
        elif ev.surface_op["op"] == "reset":  # a context started over: keep + this event
            keep = ev.surface_op["keep"]
            assert [s for s in surface if s in keep] == keep
            surface = [*keep, seq]
        else:
            op = ev.surface_op
            assert op["op"] == "fold"
            i, j = surface.index(op["start"]), surface.index(op["end"])
            removed = [s for s in surface[i : j + 1] if s not in op["keep"]]
            assert sorted(sources) == sorted(removed)
            surface = [s for s in surface if s not in removed] + [seq]
    assert not turn_open and not step_open


# --- the corpus transcripts the importers cover, and their tool counts read independently ----


def claude_files(corpus: Path) -> list[Path]:
    files = sorted((corpus / "claude-code-spotter").rglob("*.jsonl"))
    files += sorted((corpus / "codemie-code/tests/integration/session/fixtures").rglob("*.jsonl"))
    return files


def codex_files(corpus: Path) -> list[Path]:
    return sorted((corpus / "codex-localpush").glob("*.jsonl")) + sorted(
        (corpus / "codemie-code/src/agents/plugins/codex/__tests__/fixtures").glob("*.jsonl")
    )


def gemini_files(corpus: Path) -> list[Path]:
    return sorted((corpus / "codemie-code/tests/integration/metrics/fixtures/gemini").glob("session-*.json"))


def aider_files(corpus: Path) -> list[Path]:
    return [corpus / "aider/chat-history.md", *sorted((corpus / "aider/website-examples").glob("*.md"))]


OPENHANDS_FILES = [
    "openhands/evaluation/benchmarks/multi_swe_bench/examples/output.jsonl",
    "openhands/tests/unit/resolver/mock_output/output.jsonl",
    "openhands/tests/runtime/trajs/basic.json",
    "openhands/tests/runtime/trajs/basic_gui_mode.json",
    "openhands/tests/runtime/trajs/basic_interactions.json",
    "openhands/tests/runtime/trajs/wrong_initial_state.json",
]


def corpus_transcripts(corpus: Path) -> list[tuple[str, Path]]:
    """Every corpus file an importer covers, with its ``--from`` format."""
    jobs = [("claude-code", p) for p in claude_files(corpus)]
    jobs += [("codex", p) for p in codex_files(corpus)]
    jobs += [("openai", corpus / "tau-bench/gpt-4o-airline.json")]
    jobs += [("swe-agent", p) for p in sorted((corpus / "swe-agent").rglob("*.traj"))]
    jobs += [("openhands", corpus / rel) for rel in OPENHANDS_FILES]
    jobs += [("gemini", p) for p in gemini_files(corpus)]
    # aider's big history (1,134 sessions: as many logs, each saved durably) is covered in
    # process by tests/interchange; through the CLI its 14 website examples stand for it
    jobs += [("aider", p) for p in aider_files(corpus) if p.name != "chat-history.md"]
    return jobs


def _literal_list(value: Any) -> list[Any]:
    if isinstance(value, str):
        import ast

        value = ast.literal_eval(value) if value else []
    return list(value or [])


def source_tool_counts(fmt: str, path: Path) -> list[tuple[int, int]]:
    """(tool calls, tool results) per transcript in ``path``, read straight from the source."""
    text = path.read_text(encoding="utf-8")
    if fmt == "claude-code":
        calls = results = 0
        for line in text.splitlines():
            rec = json.loads(line)
            content = (
                rec.get("message", {}).get("content") if rec.get("type") in ("user", "assistant") else None
            )
            for block in content if isinstance(content, list) else []:
                calls += block.get("type") == "tool_use"
                results += block.get("type") == "tool_result"
        return [(calls, results)]
    if fmt == "codex":
        kinds = Counter(
            rec["payload"].get("type")
            for rec in map(json.loads, text.splitlines())
            if rec["type"] == "response_item"
        )
        return [
            (
                kinds["function_call"] + kinds["custom_tool_call"],
                kinds["function_call_output"] + kinds["custom_tool_call_output"],
            )
        ]
    if fmt == "openai":
        out = []
        for rec in json.loads(text):
            msgs = rec["traj"]
            calls = sum(len(m.get("tool_calls") or []) for m in msgs)
            out.append((calls, sum(1 for m in msgs if m["role"] == "tool")))
        return out
    if fmt == "swe-agent":
        history = json.loads(text)["history"]
        calls = sum(len(_literal_list(m.get("tool_calls"))) for m in history)
        results = sum(len(_literal_list(m.get("tool_call_ids"))) or 1 for m in history if m["role"] == "tool")
        return [(calls, results)]
    if fmt == "openhands":
        streams = (
            [json.loads(line)["history"] for line in text.splitlines()]
            if path.suffix == ".jsonl"
            else [json.loads(text)]
        )
        not_tools = {"message", "system", "finish", "recall", "change_agent_state", "null"}
        out = []
        for events in streams:
            calls = sum(
                1
                for e in events
                if "action" in e and ("tool_call_metadata" in e or e["action"] not in not_tools)
            )
            # flat (metadata-less) observations answer the synthesised calls; errors without
            # metadata are reports to the agent, not results
            answered = sum(
                1
                for e in events
                if "observation" in e
                and e["observation"] not in ("recall", "agent_state_changed", "null")
                and ("tool_call_metadata" in e or e["observation"] != "error")
            )
            out.append((calls, answered))
        return out
    if fmt == "gemini":
        calls = sum(len(m.get("toolCalls") or []) for m in json.loads(text)["messages"])
        return [(calls, calls)]
    if fmt == "aider":  # no tool calls: one session per start line (+ the text before the first)
        lines = text.splitlines()
        starts = [i for i, x in enumerate(lines) if x.startswith("# aider chat started at ")]
        preamble = lines[: starts[0]] if starts else lines
        return [(0, 0)] * (len(starts) + any(x.strip() and not x.startswith("-*- mode:") for x in preamble))
    raise ValueError(fmt)


# --- running the CLI as a user would -------------------------------------------------------


def cli_env(home: Path, *, set_home: bool = True) -> dict[str, str]:
    """The environment :func:`run_cli` gives the CLI (isolated home and config)."""
    home.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.update(
        {
            "FOLDLOG_HOME": str(home),
            "XDG_CONFIG_HOME": str(home / "config"),
            "XDG_STATE_HOME": str(home / "state"),
            "NO_COLOR": "1",
            "COLUMNS": "200",
            "PYTHONIOENCODING": "utf-8",
        }
    )
    if not set_home:
        del env["FOLDLOG_HOME"]
    for key in ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FOLDLOG_API_KEY"):
        env.pop(key, None)
    return env


def run_cli(
    *args: str,
    home: Path,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float = 120,
    set_home: bool = True,
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m foldlog ARGS`` with an isolated home and user config folder.

    ``set_home=False`` leaves ``FOLDLOG_HOME`` unset (the state folder is still under ``home``);
    ``extra_env`` adds variables (an API key for the run).
    """
    env = cli_env(home, set_home=set_home)
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "foldlog", *args],
        cwd=str(cwd or home),
        env=env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


# --- the flags of a run against the loopback chat server ------------------------------------


def fake_agent_args(server: LoopbackServer, workspace: Path) -> list[str]:
    """The flags of a `foldlog run` / `chat` against `server` in `workspace`."""
    return [
        "--provider",
        "openai-compatible",
        "--base-url",
        server.base_url,
        "--model",
        "fake-1",
        "--workspace",
        str(workspace),
    ]
