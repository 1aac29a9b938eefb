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

Blocks are checked before anything is logged: a malformed one makes the call's result an error
naming the tool and the path (``content[1].image_url.url``), never a crash. The output limit
applies to the text parts (their total, shared in proportion to their sizes); image and file
data are not text and are kept whole.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from foldlog.errors import InvalidEventError
from foldlog.tools.output import cap_text, clean_text, utf8_len

#: block type -> the key holding its payload
PAYLOAD: Mapping[str, str] = {
    "text": "text",
    "image_url": "image_url",
    "input_audio": "input_audio",
    "file": "file",
    "image": "source",
    "document": "source",
}
_DETAILS = ("auto", "low", "high")


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


def _need(cond: bool, path: str, what: str) -> None:
    if not cond:
        raise MalformedContent(f"{path}: {what}")


def _string(obj: Mapping[str, Any], key: str, path: str, *, optional: bool = False) -> None:
    value = obj.get(key)
    if value is None and optional:
        return
    _need(isinstance(value, str) and value != "", f"{path}.{key}", "expected a non-empty string")


def _source(block: Mapping[str, Any], path: str, kinds: Sequence[str]) -> None:
    src = block.get("source")
    _need(isinstance(src, Mapping), f"{path}.source", "expected an object")
    assert isinstance(src, Mapping)
    kind = src.get("type")
    _need(kind in kinds, f"{path}.source.type", f"expected one of {', '.join(kinds)}, got {kind!r}")
    if kind == "base64":
        _string(src, "media_type", f"{path}.source")
        _string(src, "data", f"{path}.source")
    elif kind == "url":
        _string(src, "url", f"{path}.source")
    else:  # text
        _need(isinstance(src.get("data"), str), f"{path}.source.data", "expected a string")


def check_block(block: Any, path: str) -> None:
    """Raise :class:`MalformedContent` naming the path unless ``block`` is a well-formed block."""
    _need(isinstance(block, Mapping), path, f"expected a content block object, got {type(block).__name__}")
    assert isinstance(block, Mapping)
    kind = block.get("type")
    _need(
        isinstance(kind, str) and kind in PAYLOAD,
        f"{path}.type",
        f"expected one of {', '.join(PAYLOAD)}, got {kind!r}",
    )
    if kind == "text":
        _need(isinstance(block.get("text"), str), f"{path}.text", "expected a string")
    elif kind == "image_url":
        inner = block.get("image_url")
        _need(isinstance(inner, Mapping), f"{path}.image_url", "expected an object {url, detail?}")
        assert isinstance(inner, Mapping)
        _string(inner, "url", f"{path}.image_url")
        detail = inner.get("detail")
        _need(detail is None or detail in _DETAILS, f"{path}.image_url.detail", f"expected one of {_DETAILS}")
    elif kind == "input_audio":
        inner = block.get("input_audio")
        _need(isinstance(inner, Mapping), f"{path}.input_audio", "expected an object {data, format}")
        assert isinstance(inner, Mapping)
        _string(inner, "data", f"{path}.input_audio")
        _string(inner, "format", f"{path}.input_audio")
    elif kind == "file":
        inner = block.get("file")
        _need(
            isinstance(inner, Mapping), f"{path}.file", "expected an object {file_data | file_id, filename?}"
        )
        assert isinstance(inner, Mapping)
        _need(
            isinstance(inner.get("file_data"), str) or isinstance(inner.get("file_id"), str),
            f"{path}.file",
            "expected file_data or file_id",
        )
        _string(inner, "filename", f"{path}.file", optional=True)
    elif kind == "image":
        _source(block, path, ("base64", "url"))
    else:  # document
        _source(block, path, ("base64", "url", "text"))


def check_blocks(blocks: Any) -> list[dict[str, Any]]:
    """``blocks`` checked, as plain JSON data (a copy): raises :class:`MalformedContent`."""
    _need(
        isinstance(blocks, list | tuple), "content", f"expected a list of blocks, got {type(blocks).__name__}"
    )
    _need(len(blocks) > 0, "content", "expected at least one block")
    for i, block in enumerate(blocks):
        check_block(block, f"content[{i}]")
    try:
        plain: list[dict[str, Any]] = json.loads(
            json.dumps(list(blocks), ensure_ascii=False, allow_nan=False)
        )
    except (TypeError, ValueError) as e:
        raise MalformedContent(f"content: not JSON data ({e})") from None
    return plain


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


def render_text(content: str | Sequence[Mapping[str, Any]]) -> str:
    """A result's content as one text, for front ends: text parts, other blocks as ``[image]`` …"""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        else:
            parts.append(f"[{'image' if kind in ('image', 'image_url') else kind}]")
    return "\n".join(parts)


__all__ = [
    "PAYLOAD",
    "MalformedContent",
    "cap_blocks",
    "check_block",
    "check_blocks",
    "looks_like_blocks",
    "render_text",
]
