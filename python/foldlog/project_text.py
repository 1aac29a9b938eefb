"""Plain text of a message content value (a string or a list of blocks), for listings and previews."""

from __future__ import annotations

from typing import Any


def text_of(content: Any) -> str:
    """Join the text of ``content``: a string as is; text blocks by their ``text``; others skipped."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "\n".join(parts)
    return str(content)
