"""The text of a message, by one rule for each reader.

- What the model reads (``message_text``): a string content, or its text blocks joined with a
  newline — the core's rule (``foldlog._core.message_text``), which the planner, prune and the
  summary transcript use, and which the stores' previews follow.
- What people read (``display_text``): the same, with every other block named in its place
  (``[image]``, ``[input_audio]``, …), so a listing or a transcript never hides that something
  was there.

And the one rule for text that has to become valid Unicode before it is logged
(``clean_text``): a surrogate pair held as two code points (how two ``\\uXXXX`` JSON escapes
decode when a stream splits them, one per chunk) is joined into its character, and a lone
surrogate becomes U+FFFD. Tool output and model streams (`SurrogateJoiner`, for text that
arrives in pieces) follow it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from foldlog import _core

#: block types shown as ``[image]`` whatever the API called them
IMAGE_TYPES = frozenset({"image", "image_url", "input_image"})


def clean_text(text: str) -> tuple[str, int]:
    """``text`` as valid Unicode: surrogate pairs joined, lone surrogates replaced by U+FFFD; and
    how many were replaced."""
    if text.isascii():  # O(1) in CPython: the common case costs nothing
        return text, 0
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 holds a pair as the two code units it is made of: decoding joins every pair
        # and replaces each unit left alone
        fixed = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
        return fixed, fixed.count("\ufffd") - text.count("\ufffd")
    return text, 0


class SurrogateJoiner:
    """`clean_text` for text that arrives in pieces (a model's stream): a high surrogate that ends
    a piece is held back until the next piece says whether it is half of a pair."""

    __slots__ = ("_held", "replaced")

    def __init__(self) -> None:
        self._held = ""
        self.replaced = 0  # lone surrogates replaced so far

    def feed(self, piece: str) -> str:
        """The clean text of ``piece`` that can be passed on now (may be ``""``)."""
        if not self._held and piece.isascii():
            return piece
        piece = self._held + piece
        self._held = ""
        if "\ud800" <= piece[-1:] <= "\udbff":  # a high surrogate: the first half of a pair
            piece, self._held = piece[:-1], piece[-1]
        text, n = clean_text(piece)
        self.replaced += n
        return text

    def flush(self) -> str:
        """What is held back at the end of the stream (a lone high surrogate: U+FFFD)."""
        if not self._held:
            return ""
        self._held = ""
        self.replaced += 1
        return "\ufffd"


def message_text(message: Mapping[str, Any]) -> str:
    """The words of a chat message as the model reads them (the core's rule)."""
    return _core.message_text(message)


def display_text(content: Any) -> str:
    """Plain text of a content value for people (a listing, a transcript, the `ToolResult` event
    a front end shows): a string as is; of a list, the strings and text blocks, and every other
    block by name (``[image]``, ``[input_audio]``, …), joined with newlines."""
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


__all__ = ["IMAGE_TYPES", "SurrogateJoiner", "clean_text", "display_text", "message_text"]
