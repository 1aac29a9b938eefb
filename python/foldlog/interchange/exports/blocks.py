"""Content blocks in the export formats: the media type of a block, and the one way a block a
format cannot carry is handled — written as its name in text (``[input_audio]``, what people
read for it everywhere, `foldlog.log.text.display_text`) with a warning naming the message and
the block. ``export(..., strict=True)`` (``--strict``) turns the warnings into an error.

What each format carries (docs/interchange.md, "What each format carries"):

- Claude Code: text, images and documents (Anthropic's ``image`` / ``document`` blocks; an
  OpenAI ``file`` becomes a ``document`` as the Anthropic provider sends it); not audio;
- Codex: text and images (``input_image``); not audio, files or documents;
- ATIF-v1.7: text and images of ``image/jpeg``, ``image/png``, ``image/gif``, ``image/webp``
  (its ``ImageSource`` allows no other type); not audio, files, documents, other images, or a
  link whose type cannot be told.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foldlog.interchange.exports.walk import Compaction, Record, Reply, Result, System, TurnEnd, User
from foldlog.log.text import display_text

#: a link's file extension -> its media type (images, and the documents a link may name)
_EXTENSIONS = {
    "jpg": "image/jpeg",
    "jpeg": "image/jpeg",
    "png": "image/png",
    "gif": "image/gif",
    "webp": "image/webp",
    "svg": "image/svg+xml",
    "bmp": "image/bmp",
    "tif": "image/tiff",
    "tiff": "image/tiff",
    "ico": "image/x-icon",
    "heic": "image/heic",
    "avif": "image/avif",
    "pdf": "application/pdf",
}


def data_url_type(url: str) -> str | None:
    """The media type a ``data:`` URL declares (``image/svg+xml``), else None."""
    if not url.startswith("data:"):
        return None
    media = url[5:].split(",", 1)[0].split(";", 1)[0].strip().lower()
    return media or None


def link_type(url: str) -> str | None:
    """The media type a link's file extension names (``…/a.bmp`` → ``image/bmp``), else None."""
    path = url.split("?", 1)[0].split("#", 1)[0]
    name = path.rsplit("/", 1)[-1]
    return _EXTENSIONS.get(name.rsplit(".", 1)[-1].lower()) if "." in name else None


def block_url(block: Mapping[str, Any]) -> str | None:
    """The URL (a link or a ``data:`` URL) an image block holds, in either block form."""
    if block.get("type") == "image_url":
        inner = block.get("image_url")
        url = inner.get("url") if isinstance(inner, Mapping) else inner
        return url if isinstance(url, str) else None
    if block.get("type") == "image":
        source = block.get("source")
        source = source if isinstance(source, Mapping) else {}
        if source.get("type") == "base64":
            return f"data:{source.get('media_type') or ''};base64,{source.get('data') or ''}"
        url = source.get("url") or source.get("path")
        return url if isinstance(url, str) else None
    return None


def media_type(block: Mapping[str, Any]) -> str | None:
    """What a block holds, as a media type: the type a data URL or a ``source`` declares, an
    audio block's format, a link's extension; None when it cannot be told (a text block, a link
    without a known extension)."""
    kind = block.get("type")
    if kind in ("image", "document"):
        source = block.get("source")
        declared = source.get("media_type") if isinstance(source, Mapping) else None
        if isinstance(declared, str) and declared:
            return declared.lower()
        if isinstance(source, Mapping) and source.get("type") == "text":
            return "text/plain"
    if kind in ("image", "image_url"):
        url = block_url(block)
        return (data_url_type(url) or link_type(url)) if url else None
    if kind == "input_audio":
        inner = block.get("input_audio")
        fmt = inner.get("format") if isinstance(inner, Mapping) else None
        return f"audio/{fmt}" if isinstance(fmt, str) and fmt else None
    if kind == "file":
        inner = block.get("file")
        data = inner.get("file_data") if isinstance(inner, Mapping) else None
        return data_url_type(data) if isinstance(data, str) else None
    return None


def where(rec: Record) -> str:
    """The message a record is, for a warning: ``message #12 (user)``."""
    if isinstance(rec, Result):
        return f"message #{rec.seq} (tool result of {rec.call_id})"
    role = {System: "system", User: "user", Reply: "assistant"}.get(type(rec), "event")
    if isinstance(rec, Compaction | TurnEnd):
        role = type(rec).__name__.lower()
    return f"message #{rec.seq} ({role})"


class Uncarried:
    """The warnings of one export about the blocks it could not carry."""

    def __init__(self, fmt: str) -> None:
        #: the format's name for people (``Codex``)
        self.fmt = fmt
        self.warnings: list[str] = []

    def text_for(self, at: str, index: int, block: Mapping[str, Any], why: str) -> dict[str, Any]:
        """The text block written for a block the format cannot carry (its name, as people read
        it; a linked image with its link), with the warning naming the message, the block and
        why."""
        url = block_url(block)
        if url is not None and not url.startswith("data:"):
            text = f"[image: {url}]"
        else:
            text = display_text([block]) or f"[{block.get('type')}]"
        media = media_type(block)
        what = f"{block.get('type')}, {media}" if media else str(block.get("type"))
        self.warnings.append(f"{at} block {index} ({what}): {why} — written as the text {text!r}")
        return {"type": "text", "text": text}


__all__ = ["Uncarried", "block_url", "data_url_type", "link_type", "media_type", "where"]
