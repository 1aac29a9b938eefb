"""Real transcripts from ../shared/corpus: as OpenAI-chat message lists (for planner tests and B4),
and as sessions recorded by foldlog's own importers (for tests of what the core reads from a log).

Only what the planner needs is converted faithfully into message lists: roles, text, tool-call ids
and names, and the pairing of results with their calls. Reasoning/thinking is dropped (it is not
sent back). A source's own compaction is only a text there (``isCompactSummary`` wrapped in
``<compaction-summary>``), which is not a digest: the imported sessions record it as a fold.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldlog import Session

Message = dict[str, Any]


def shared_dir() -> Path:
    env = os.environ.get("FOLDLOG_SHARED")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2].parent / "shared"


def corpus_dir() -> Path:
    return shared_dir() / "corpus"


def _blocks_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, dict) and b.get("type") == "text":
                parts.append(str(b.get("text", "")))
        return "".join(parts)
    return ""


def claude_code(path: Path) -> list[Message]:
    """A Claude Code session JSONL: one API reply spans several lines (merged while uninterrupted)."""
    out: list[Message] = []
    current_id: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        kind = rec.get("type")
        if kind not in ("user", "assistant") or rec.get("isSidechain"):
            continue
        msg = rec.get("message") or {}
        content = msg.get("content")
        if kind == "assistant":
            mid = msg.get("id")
            if not (out and current_id == mid and out[-1]["role"] == "assistant"):
                out.append({"role": "assistant", "content": ""})
                current_id = mid
            target = out[-1]
            for b in content if isinstance(content, list) else [{"type": "text", "text": content or ""}]:
                if b.get("type") == "text":
                    target["content"] += str(b.get("text", ""))
                elif b.get("type") == "tool_use":
                    target.setdefault("tool_calls", []).append(
                        {
                            "id": b["id"],
                            "type": "function",
                            "function": {
                                "name": b.get("name", ""),
                                "arguments": json.dumps(b.get("input", {})),
                            },
                        }
                    )
            continue
        current_id = None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            for b in content:
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    text = _blocks_text(b.get("content"))
                    if b.get("is_error") and not text.lower().startswith("error:"):
                        text = "Error: " + text
                    out.append(
                        {"role": "tool", "tool_call_id": b.get("tool_use_id"), "name": "", "content": text}
                    )
            continue
        text = _blocks_text(content)
        if rec.get("isCompactSummary"):
            text = f"<compaction-summary>\n{text}\n</compaction-summary>"
        out.append({"role": "user", "content": text})
    return out


def codex(path: Path) -> list[Message]:
    """A Codex rollout JSONL: the ``response_item`` records are the model-visible history."""
    out: list[Message] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        if rec.get("type") != "response_item":
            continue
        p = rec["payload"]
        kind = p.get("type")
        if kind == "message":
            role = {"developer": "system" if not out else "user"}.get(p.get("role"), p.get("role"))
            text = "".join(str(c.get("text", "")) for c in p.get("content") or [] if isinstance(c, dict))
            out.append({"role": role, "content": text})
        elif kind in ("function_call", "custom_tool_call"):
            args = (
                p.get("arguments") if kind == "function_call" else json.dumps({"input": p.get("input", "")})
            )
            call = {
                "id": p["call_id"],
                "type": "function",
                "function": {"name": p.get("name", ""), "arguments": args},
            }
            # a call joins the previous assistant message while none of its results arrived
            if out and out[-1]["role"] == "assistant":
                out[-1].setdefault("tool_calls", []).append(call)
            else:
                out.append({"role": "assistant", "content": "", "tool_calls": [call]})
        elif kind in ("function_call_output", "custom_tool_call_output"):
            output = p.get("output")
            text = output if isinstance(output, str) else json.dumps(output)
            out.append({"role": "tool", "tool_call_id": p["call_id"], "name": "", "content": text})
    return out


def _sources() -> Iterator[tuple[str, Path]]:
    root = corpus_dir()
    for p in sorted((root / "claude-code-spotter").glob("*.jsonl")):
        yield "claude-code", p
    for p in sorted((root / "codemie-code").rglob("*.jsonl")):
        yield ("codex" if "codex" in str(p) else "claude-code"), p
    for p in sorted((root / "codex-localpush").glob("*.jsonl")):
        yield "codex", p
    yield "openai", root / "tau-bench" / "gpt-4o-airline.json"


def imported_sessions() -> Iterator[tuple[str, Session]]:
    """Every real transcript recorded by foldlog's importers and loaded back (repaired as a
    resumed session is), by name."""
    from foldlog import Session
    from foldlog.interchange import convert, write_conversation

    for fmt, path in _sources():
        for i, conversation in enumerate(convert(fmt, path)):
            s = Session()
            write_conversation(conversation, s)
            yield f"{fmt}:{path.name}:{i}", Session.from_bytes(s._core.to_bytes())


def tau_bench(path: Path, limit: int | None = None) -> Iterator[list[Message]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    for task in data[:limit]:
        yield [dict(m) for m in task["traj"]]


def all_histories() -> Iterator[tuple[str, list[Message]]]:
    """Every convertible real transcript, by name."""
    root = corpus_dir()
    for p in sorted((root / "claude-code-spotter").glob("*.jsonl")):
        yield f"claude:{p.name}", claude_code(p)
    for p in sorted((root / "codemie-code").rglob("*.jsonl")):
        if "codex" in str(p):
            yield f"codex:{p.name}", codex(p)
        else:
            yield f"claude:{p.name}", claude_code(p)
    for p in sorted((root / "codex-localpush").glob("*.jsonl")):
        yield f"codex:{p.name}", codex(p)
    for i, h in enumerate(tau_bench(root / "tau-bench" / "gpt-4o-airline.json")):
        yield f"tau:{i}", h
