"""The sessions the viewer's tests look at: one the agent writes (a sub-agent, a fold, a fork, an
image, a planted secret) and corpus transcripts imported as `foldlog log import` writes them."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from foldlog import Agent, Options, Session, tool
from foldlog.agent.subagent import task_tool
from foldlog.log.forks import fork_session
from foldlog.providers import Scripted
from tests.agent.agent_helpers import call, reply
from tests.cli.cli_testlib import run_cli

#: a secret the agent's session holds (the page must not, unless --no-redact)
SECRET = "sk-proj-Zq3xV9mK2pL7vR4tW8yA1cF6hJ0nD5sGbT"
#: a 1x1 PNG
PIXEL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
AGENT_ID = "agent-run"
FORK_ID = "agent-fork"
#: a model with an exact tokenizer: the page's counts are the session's own
MODEL = "deepseek-v4-flash"


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up."""
    return f"value-of-{key} " + "filler line of tool output\n" * 40


def agent_session(folder: Path) -> Path:
    """A session the agent writes into ``folder``: a turn delegating to a sub-agent (its log
    beside the parent's), a compaction (a fold with its digest), a turn with an image, and a fork
    after the first turn with a turn of its own. Returns the parent's log."""
    session = Session.open(folder, AGENT_ID, system="You are a test assistant.")
    provider = Scripted(
        [
            reply("delegating", call("task", {"prompt": "find k"}, "t1")),
            reply("child looks", call("lookup", {"key": "k"}, "c1")),
            reply("the value is value-of-k"),
            reply(
                "done: value-of-k",
                usage={"prompt_tokens": 900, "completion_tokens": 12, "cache_hit_tokens": 640},
            ),
            reply("", call("lookup", {"key": "q"}, "c2")),
            reply("q is value-of-q"),
            reply("Summary: the user asked for k and q; k is value-of-k, q is value-of-q."),
            reply("a red pixel"),
        ],
        model=MODEL,
    )
    # a small tail, so that the manual compaction has something to fold
    options = Options(max_steps=20, tail_tokens=64, min_fold_tokens=1, min_recent_keep=1)
    agent = Agent(provider, [lookup, task_tool()], session, options)
    agent.run_sync(f"what is k? (my key is {SECRET})")
    first_turn_end = len(session.events) - 1
    agent.run_sync("and q?")
    asyncio.run(agent.compact("keep the keys"))
    agent.run_sync(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": PIXEL}},
            ],
        }
    )
    session.flush()
    fork = fork_session(session, first_turn_end, folder / f"{FORK_ID}.jsonl")
    fork_agent = Agent(
        Scripted([reply("the fork answers differently")], model=MODEL), [lookup], fork, Options()
    )
    fork_agent.run_sync("a question only the fork was asked")
    fork.close()
    session.close()
    return folder / f"{AGENT_ID}.jsonl"


def import_transcript(source: Path, folder: Path, home: Path) -> Path:
    """``foldlog log import --from claude-code SOURCE -o FOLDER/`` (sub-agents beside it); the main log."""
    result = run_cli(
        "log", "import", "--from", "claude-code", str(source), "-o", f"{folder}/", "--json", home=home
    )
    assert result.returncode == 0, result.stderr
    written: Any = json.loads(result.stdout)
    items = written if isinstance(written, list) else [written]
    main = [i for i in items if i["parent"] is None]
    return Path(main[0]["path"])


def view(log: Path, page: Path, home: Path, *flags: str) -> str:
    """``foldlog log view LOG -o PAGE FLAGS``; the page's HTML."""
    result = run_cli("log", "view", str(log), "-o", str(page), *flags, home=home)
    assert result.returncode == 0, result.stderr
    return page.read_text(encoding="utf-8")


def logs_bytes(folder: Path) -> int:
    """The bytes of every log in ``folder`` (what the page's size is measured against)."""
    return sum(p.stat().st_size for p in folder.glob("*.jsonl"))
