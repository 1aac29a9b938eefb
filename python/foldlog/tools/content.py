"""Tool results made of content blocks (a screenshot tool returns text and an image).

A tool returns blocks either explicitly, ``ToolOutcome(content=[...])``, or as a plain list whose
every item is a block: a mapping whose ``type`` is a content block type *and* which carries that
type's payload (``{"type": "image_url", "image_url": {...}}``). Anything else keeps its old
meaning (a list of records, ``[{"type": "file", "name": "a.py"}]``, is JSON text).

The block types are those the log records and the providers send (``docs/providers.md``):

- OpenAI chat blocks: ``text``, ``image_url`` ``{url, detail?}``, ``input_audio`` ``{data,
  format}``, ``file`` ``{file_data | file_id, filename?}``;
- Anthropic-style blocks, as the importers write them: ``image`` / ``document`` with a
  ``source`` ``{"type": "base64", "media_type", "data"}`` (or ``url``; ``document`` also
  ``text``).

Blocks are checked before anything is logged, by the log's own block rule (the core's, which
checks every message on the way into the log): a malformed one makes the call's result an error
naming the tool and the path (``content[1].image_url.url``), never a crash. The output limit
applies to the text parts (their total, shared in proportion to their sizes); image and file
data are not text and are kept whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foldlog import _core
from foldlog.errors import InvalidEventError
from foldlog.tools.output import cap_text, clean_text, utf8_len

#: block type -> the key holding its payload (the types are those the core lets a tool return)
PAYLOAD: Mapping[str, str] = {
    "text": "text",
    "image_url": "image_url",
    "input_audio": "input_audio",
    "file": "file",
    "image": "source",
    "document": "source",
}


class MalformedContent(InvalidEventError):
    """A content block that is not one the log and the providers understand (names the path)."""


def looks_like_blocks(value: Any) -> bool:
    """Whether a tool's plain return value is a list of content blocks (see the module doc)."""
    if not isinstance(value, list | tuple) or not value:
        return False
    for item in value:
        if not isinstance(item, Mapping):
            return False
        kind = item.get("type")
        if not isinstance(kind, str) or kind not in PAYLOAD or PAYLOAD[kind] not in item:
            return False
    return True


def check_blocks(blocks: Any) -> list[dict[str, Any]]:
    """``blocks`` checked by the log's block rule, as plain JSON data (a copy); raises
    :class:`MalformedContent` naming the place (``content[1].image_url.url``). The rule is the
    core's (``foldlog._core.check_tool_blocks``): the one every message's blocks are checked by
    on the way into the log, and for a tool's blocks also at least one block, each of a type the
    providers send (the keys of `PAYLOAD`)."""
    try:
        return _core.check_tool_blocks(blocks)
    except InvalidEventError as e:
        raise MalformedContent(str(e)) from None


def cap_blocks(blocks: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], int, int]:
    """The text parts of ``blocks`` within ``limit`` bytes in total (each kept head and tail, with
    a budget in proportion to its size), lone surrogates replaced; bytes omitted, characters
    replaced."""
    sizes = [utf8_len(b["text"]) if b["type"] == "text" else 0 for b in blocks]
    total = sum(sizes)
    omitted = replaced = 0
    out: list[dict[str, Any]] = []
    for block, size in zip(blocks, sizes, strict=True):
        if block["type"] != "text":
            out.append(block)
            continue
        text = block["text"]
        if total > limit:
            text, cut = cap_text(text, max(limit * size // total, 64))
            omitted += cut
        text, fixed = clean_text(text)
        replaced += fixed
        out.append({**block, "text": text})
    return out, omitted, replaced


__all__ = [
    "PAYLOAD",
    "MalformedContent",
    "cap_blocks",
    "check_blocks",
    "looks_like_blocks",
]
