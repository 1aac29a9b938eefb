"""The text of a message, by one rule for each reader.

- What the model reads (``message_text``): a string content, or its text blocks joined with a
  newline — the core's rule (``foldlog._core.message_text``), which the planner, prune and the
  summary transcript use, and which the stores' previews follow.
- What people read (``display_text``): the same, with every other block named in its place
  (``[image]``, ``[input_audio]``, …), so a listing or a transcript never hides that something
  was there.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foldlog import _core

#: block types shown as ``[image]`` whatever the API called them
IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})


def message_text(message: Mapping[str, Any]) -> str:
    """The words of a chat message as the model reads them (the core's rule)."""
    return _core.message_text(message)


def display_text(content: Any) -> str:
    """Plain text of a content value for people: a string as is; of a list, the strings and text
    blocks, and every other block by name, joined with newlines."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list | tuple):
        parts: list[str] = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, Mapping):
                kind = block.get("type")
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif kind in IMAGE_TYPES:
                    parts.append("[image]")
                elif kind is not None:
                    parts.append(f"[{kind}]")
        return "\n".join(parts)
    return str(content)


__all__ = ["IMAGE_TYPES", "display_text", "message_text"]
