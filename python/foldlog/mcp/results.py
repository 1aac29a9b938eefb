"""An MCP ``tools/call`` result as a foldlog tool outcome (the ``tool/result`` event's content).

Text blocks become text; images become ``image_url`` blocks with a data URL and audio
``input_audio`` blocks (``foldlog.tools.content``); an embedded text resource is its text, a
binary one and a resource link are named. ``structuredContent`` (JSON) is the text when the
server sent no text block beside it (servers usually send both: the text is kept). ``isError``
becomes an error result. The runner then applies the output cap as to any tool.
"""

from __future__ import annotations

import json
from typing import Any

from foldlog.tools.host import ToolOutcome


def _block(item: Any) -> dict[str, Any]:
    kind = getattr(item, "type", None)
    if kind == "text":
        return {"type": "text", "text": str(item.text)}
    if kind == "image":
        mime = str(getattr(item, "mime_type", None) or "image/png")
        return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{item.data}"}}
    if kind == "audio":
        mime = str(getattr(item, "mime_type", None) or "audio/wav")
        return {"type": "input_audio", "input_audio": {"data": str(item.data), "format": mime.split("/")[-1]}}
    if kind == "resource":
        res = item.resource
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return {"type": "text", "text": text}
        mime = getattr(res, "mime_type", None) or "application/octet-stream"
        return {"type": "text", "text": f"[binary resource {res.uri} ({mime}) not shown]"}
    if kind == "resource_link":
        return {"type": "text", "text": f"[resource link: {item.uri}]"}
    return {"type": "text", "text": f"[unsupported MCP content type {kind!r}]"}


def to_outcome(result: Any) -> ToolOutcome:
    """A ``CallToolResult`` (the SDK's model) as a :class:`ToolOutcome`."""
    blocks = [_block(c) for c in (getattr(result, "content", None) or ())]
    structured = getattr(result, "structured_content", None)
    if structured is not None and not any(b["type"] == "text" for b in blocks):
        blocks.insert(0, {"type": "text", "text": json.dumps(structured, ensure_ascii=False, sort_keys=True)})
    is_error = bool(getattr(result, "is_error", False))
    content: str | list[dict[str, Any]]
    if all(b["type"] == "text" for b in blocks):
        content = "\n".join(b["text"] for b in blocks)
        if is_error and not content.startswith("error"):
            content = f"error: {content}" if content else "error: the tool failed without a message"
    else:
        content = blocks
    return ToolOutcome(content, is_error=is_error)


__all__ = ["to_outcome"]
