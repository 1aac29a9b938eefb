"""Content blocks on the send side: which non-text blocks a request holds, and whether the
provider (and its model) takes them.

The messages a request carries are already mapped for chat completions by the session core
(`wire.rs`: importer ``image``/``document`` blocks become ``image_url``/``file``, images of tool
results move to a user message). What is left to decide here is only whether the endpoint takes
each block type: a provider declares ``content_types`` (``None``: anything), and a request with a
block it cannot take fails *before* anything is sent, naming the message and the block.

Finding the non-text blocks is a scan of the messages: the agent's :class:`ContentScan` looks
only at the messages the core says hold blocks (nothing is built for the others) and hands the
result to the provider in ``Request.content``; a request built by hand is scanned whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog.errors import UnsupportedContentError

if TYPE_CHECKING:
    from foldlog.providers.base import Request

#: text only (DeepSeek, the local Gemma 3 270M)
TEXT_ONLY: frozenset[str] = frozenset({"text"})
#: text and images (the default of a generic OpenAI-compatible endpoint)
TEXT_AND_IMAGES: frozenset[str] = frozenset({"text", "image_url"})
#: every block type of OpenAI chat completions user content
CHAT_COMPLETIONS: frozenset[str] = frozenset({"text", "image_url", "input_audio", "file"})


@dataclass(frozen=True, slots=True)
class BlockRef:
    """A non-text content block: ``messages[index].content[block]`` of type ``type``."""

    index: int
    role: str
    block: int
    type: str


def non_text_blocks(
    messages: Sequence[Mapping[str, Any]], start: int = 0, stop: int | None = None
) -> list[BlockRef]:
    """The non-text blocks of ``messages[start:stop]`` (indices into ``messages``)."""
    out: list[BlockRef] = []
    end = len(messages) if stop is None else stop
    for i in range(start, end):
        m = messages[i]
        content = m.get("content")
        if content.__class__ is str or not content or not isinstance(content, Sequence):
            continue
        for j, block in enumerate(content):
            kind = block.get("type") if isinstance(block, Mapping) else None
            if kind != "text":
                out.append(BlockRef(i, str(m.get("role", "?")), j, kind if isinstance(kind, str) else "?"))
    return out


@dataclass(frozen=True, slots=True)
class ContentIndex:
    """The non-text blocks of ``messages``; trusted by a provider only while its request carries
    this very ``messages`` object (a hook that swapped the messages gets a fresh scan)."""

    messages: Sequence[Mapping[str, Any]]
    blocks: tuple[BlockRef, ...]


class ContentScan:
    """Finds the non-text blocks of one session's requests. The messages of a request taken from
    a session (a :class:`foldlog.log.frozen.MessageSequence`) say which of them hold a list of
    blocks without being built (the core knows it from the log), so only those are looked at;
    any other sequence is scanned whole."""

    __slots__ = ()

    def index(self, messages: Sequence[Mapping[str, Any]]) -> ContentIndex:
        from foldlog.log.frozen import MessageSequence

        if not isinstance(messages, MessageSequence):
            return ContentIndex(messages, tuple(non_text_blocks(messages)))
        found: list[BlockRef] = []
        for i in messages.block_indexes():
            found += non_text_blocks(messages, i, i + 1)
        return ContentIndex(messages, tuple(found))


def check_content(request: Request, accepted: frozenset[str] | None, who: str) -> None:
    """Raise :class:`UnsupportedContentError` for the first block of ``request`` whose type is
    not in ``accepted`` (``None`` accepts everything)."""
    if accepted is None:
        return
    index = request.content
    refs: Sequence[BlockRef] = (
        index.blocks
        if index is not None and index.messages is request.messages
        else non_text_blocks(request.messages)
    )
    for ref in refs:
        if ref.type not in accepted:
            takes = ", ".join(sorted(accepted))
            raise UnsupportedContentError(
                f"{who} cannot send messages[{ref.index}] ({ref.role}): content[{ref.block}] is a "
                f"{ref.type!r} block, and this provider/model takes only {takes} blocks; nothing was "
                "sent (use a provider that takes it, or set its content_types if the model does)",
                index=ref.index,
                role=ref.role,
                block=ref.block,
                block_type=ref.type,
                provider=who,
            )


__all__ = [
    "CHAT_COMPLETIONS",
    "TEXT_AND_IMAGES",
    "TEXT_ONLY",
    "BlockRef",
    "ContentIndex",
    "ContentScan",
    "check_content",
    "non_text_blocks",
]
