"""The B1 baseline: the same load work as foldlog's core, written in plain Python.

A straightforward, competent implementation with a pluggable JSON parser (`orjson.loads` or
`json.loads`): parse every line, check the envelope (known type, `seq` continuity,
`sourceEventSeqs` earlier and unique, `surfaceOp` exactly on surface events, `data` an object),
apply the surface ops (append/replace/insert/fold/reset, with their rules), project the surface
into OpenAI chat messages with the same rules as `derive_messages()`, and check what the load
normalizer checks (each tool call answered, named, with valid JSON arguments; no open turn).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SURFACE = frozenset({"system/message", "user/message", "assistant/message", "tool/result"})
KNOWN = SURFACE | {
    "assistant/chunk",
    "tool/call",
    "turn/start",
    "turn/end",
    "step/start",
    "step/end",
    "request/header",
    "compaction/start",
    "compaction/summary",
    "compaction/end",
}

Loads = Callable[[bytes], Any]


class LoadError(ValueError):
    pass


def _text_of(content: Any) -> Any:
    """Text blocks joined with newlines; a list with non-text blocks stays a list (None)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for b in content:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict):
                t = b.get("type")
                if t == "text" or t is None:
                    text = b.get("text")
                    parts.append(text if isinstance(text, str) else "")
                elif t in ("tool_use", "thinking", "redacted_thinking"):
                    continue
                else:
                    return None
            else:
                return None
        return "\n".join(parts)
    return None


def _args_text(v: Any, dumps: Callable[[Any], str]) -> str:
    if v is None:
        return ""
    return v if isinstance(v, str) else dumps(v)


def _calls(msg: dict[str, Any], seq: int, dumps: Callable[[Any], str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    raw = list(msg.get("tool_calls") or [])
    content = msg.get("content")
    if isinstance(content, list):
        raw += [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
    for c in raw:
        fn = c.get("function") if isinstance(c.get("function"), dict) else None
        name = (fn or {}).get("name") if fn else c.get("name")
        args = fn.get("arguments") if fn else c.get("arguments", c.get("input"))
        cid = c.get("id")
        out.append(
            {
                "id": cid if isinstance(cid, str) else f"call_{seq}_{len(out)}",
                "type": "function",
                "function": {
                    "name": name if isinstance(name, str) else "",
                    "arguments": _args_text(args, dumps),
                },
            }
        )
    return out


def project(
    ev: dict[str, Any], events: list[dict[str, Any]], dumps: Callable[[Any], str]
) -> dict[str, Any] | None:
    kind = ev["type"]
    data = ev["data"]
    if kind in ("system/message", "user/message"):
        content = data.get("content")
        text = _text_of(content)
        m: dict[str, Any] = {"role": "system" if kind == "system/message" else "user"}
        m["content"] = text if text is not None else content
        if kind == "user/message" and isinstance(data.get("name"), str):
            m["name"] = data["name"]
        return m
    msg = data.get("message") or {}
    if kind == "assistant/message":
        content = msg.get("content")
        text = _text_of(content)
        calls = _calls(msg, ev["seq"], dumps)
        if text == "" and not calls:
            return None
        m = {"role": "assistant", "content": text if text is not None else content}
        r = msg.get("reasoning_content")
        if isinstance(r, str) and r:
            m["reasoning_content"] = r
        if calls:
            m["tool_calls"] = calls
        return m
    # tool/result
    cid = next((msg[k] for k in ("toolCallId", "tool_call_id") if isinstance(msg.get(k), str)), None)
    name = next((msg[k] for k in ("toolName", "name") if isinstance(msg.get(k), str)), None)
    if cid is None or name is None:
        for s in ev.get("sourceEventSeqs") or ():
            call = events[s]
            if call["type"] == "tool/call":
                cd = call["data"]
                cid = cid if cid is not None else cd.get("callId")
                name = name if name is not None else cd.get("name")
                break
    m = {"role": "tool"}
    if cid is not None:
        m["tool_call_id"] = cid
    if name is not None:
        m["name"] = name
    if msg.get("isError") is True or msg.get("is_error") is True:
        m["is_error"] = True  # the core's projection says a call failed (absent when it did not)
    content = msg.get("content")
    text = _text_of(content)
    m["content"] = text if text is not None else dumps(content)
    return m


def _apply(surface: list[int], seq: int, op: Any, sources: list[int]) -> bool:
    """Apply a surface op; True when it rewrites (bumps the generation)."""
    if op == "append":
        surface.append(seq)
        return False
    if not isinstance(op, dict):
        raise LoadError(f"event #{seq}: bad surfaceOp {op!r}")
    pos = {s: i for i, s in enumerate(surface)}

    def at(s: int) -> int:
        if s not in pos:
            raise LoadError(f"event #{seq}: surfaceOp names seq {s}, which is not on the surface")
        return pos[s]

    kind = op.get("op")
    if kind == "replace":
        a, b = at(op["start"]), at(op["end"])
        if a > b or not set(surface[a : b + 1]) <= set(sources):
            raise LoadError(f"event #{seq}: bad replace")
        surface[a : b + 1] = [seq]
    elif kind == "insert":
        surface.insert(at(op["after"]) + 1, seq)
    elif kind == "fold":
        a, b = at(op["start"]), at(op["end"])
        keep = list(op.get("keep") or [])
        kept = [at(k) for k in keep]
        if a > b or any(not a <= p <= b for p in kept) or kept != sorted(set(kept)):
            raise LoadError(f"event #{seq}: bad fold")
        removed = [surface[p] for p in range(a, b + 1) if p not in set(kept)]
        if not set(removed) <= set(sources):
            raise LoadError(f"event #{seq}: fold removes seqs it does not list")
        surface[a : b + 1] = [*keep, seq]
    elif kind == "reset":
        keep = list(op.get("keep") or [])
        kept = [at(k) for k in keep]
        if kept != sorted(set(kept)):
            raise LoadError(f"event #{seq}: bad reset")
        surface[:] = [*keep, seq]
    elif kind == "append":
        surface.append(seq)
        return False
    else:
        raise LoadError(f"event #{seq}: unknown surfaceOp {kind!r}")
    return True


def load(path: str, loads: Loads, dumps: Callable[[Any], str]) -> tuple[list[dict[str, Any]], int]:
    """Load a log and derive its messages; returns (messages, number of repairs needed)."""
    with open(path, "rb") as f:
        raw = f.read()
    events: list[dict[str, Any]] = []
    surface: list[int] = []
    open_turn = False
    first = True
    for n, line in enumerate(raw.split(b"\n"), 1):
        line = line.strip()
        if not line:
            continue
        try:
            ev = loads(line)
        except ValueError as e:
            raise LoadError(f"line {n}: not JSON: {e}") from None
        kind = ev.get("type")
        if first:
            first = False
            if kind == "session":
                if ev.get("version", 0) > 1:
                    raise LoadError("newer format")
                continue
        if kind not in KNOWN and not ev.get("ignorable"):
            raise LoadError(f"line {n}: unknown event type {kind!r} (newer format)")
        seq = ev.get("seq")
        if seq != len(events):
            raise LoadError(f"line {n}: seq {seq} breaks continuity: expected {len(events)}")
        if not isinstance(ev.get("data"), dict) and "data" not in ev:
            raise LoadError(f"line {n}: event without data")
        sources = ev.get("sourceEventSeqs")
        if sources is not None:
            if len(set(sources)) != len(sources) or any(s >= seq for s in sources):
                raise LoadError(f"line {n}: bad sourceEventSeqs")
        op = ev.get("surfaceOp")
        if (kind in SURFACE) != (op is not None):
            raise LoadError(f"line {n}: surfaceOp on the wrong event")
        if op is not None:
            if not isinstance(ev["data"], dict):
                raise LoadError(f"line {n}: data must be an object")
            _apply(surface, seq, op, sources or [])
        if kind == "turn/start":
            open_turn = True
        elif kind == "turn/end":
            open_turn = False
        elif kind == "step/start":
            open_turn = True
        events.append(ev)
    messages = []
    for s in surface:
        m = project(events[s], events, dumps)
        if m is not None:
            messages.append(m)
    return messages, _repairs_needed(messages, loads) + int(open_turn)


def _repairs_needed(messages: list[dict[str, Any]], loads: Loads) -> int:
    """What the load normalizer would fix: unanswered calls, empty names, broken arguments."""
    fixes = 0
    for i, m in enumerate(messages):
        calls = m.get("tool_calls")
        if not calls:
            continue
        results = set()
        for j in range(i + 1, len(messages)):
            r = messages[j]
            if r["role"] == "assistant":
                break
            if r["role"] == "tool":
                results.add(r.get("tool_call_id"))
        for c in calls:
            fn = c["function"]
            if c["id"] not in results or not fn["name"]:
                fixes += 1
            if fn["arguments"]:
                try:
                    loads(fn["arguments"])
                except ValueError:
                    fixes += 1
    return fixes
