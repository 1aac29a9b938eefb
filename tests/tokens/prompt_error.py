"""How close foldlog's request token counts come to the `prompt_tokens` DeepSeek reported.

Reads the recorded DeepSeek chat-completions requests (and their responses' usage) in
``shared/corpus/langchaingo-httprr`` and ``shared/corpus/pydantic-ai-cassettes/extracted``:
one `Row` per request with the reported prompt tokens and our count. The test checks them;
``benches/tokens_prompt_error.py`` prints them for the figures in docs/tokens.md.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import foldlog
from tests.tokens.tokens_corpus import shared_dir

FOLDERS = ["langchaingo-httprr", "pydantic-ai-cassettes/extracted"]


@dataclass
class Row:
    name: str
    model: str
    reported: int
    counted: int
    messages: int
    tools: int


def _usage(response: Path) -> dict[str, Any] | None:
    raw = response.read_text(encoding="utf-8")
    if response.suffix == ".json":
        body = json.loads(raw)
        body = body.get("body", body)
        if isinstance(body, str):
            body = json.loads(body)
        return body.get("usage")  # type: ignore[no-any-return]
    usage = None
    for line in raw.splitlines():
        data = line.removeprefix("data: ").strip()
        if data.startswith("{"):
            usage = json.loads(data).get("usage") or usage
    return usage


def rows() -> list[Row]:
    out = []
    for folder in FOLDERS:
        for req in sorted((shared_dir() / "corpus" / folder).glob("*.request.json")):
            body = json.loads(req.read_text(encoding="utf-8"))
            body = body.get("body", body)
            if isinstance(body, str):
                body = json.loads(body)
            model = str(body.get("model", ""))
            if not model.startswith("deepseek") or "messages" not in body:
                continue  # DeepSeek chat completions only (not the Responses API)
            stem = req.name.removesuffix(".request.json")
            resp = next(iter(req.parent.glob(f"{glob_escape(stem)}.response.*")), None)
            usage = _usage(resp) if resp else None
            if not usage or "prompt_tokens" not in usage:
                continue
            t = foldlog.Tokenizer.for_model(model)
            tools = body.get("tools") or []
            counted = t.count_request(body["messages"], tools)
            out.append(Row(stem, model, usage["prompt_tokens"], counted, len(body["messages"]), len(tools)))
    return out


def glob_escape(s: str) -> str:
    return s.replace("[", "[[]")
