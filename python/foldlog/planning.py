"""Planner input: the per-message facts the Rust compaction planner works on.

The planner (``foldlog._core.PlanHistory``) never sees text. This module reads chat messages
(the OpenAI shape ``Session.derive_messages()`` returns) and extracts what the planning rules of
``spec/compaction.md`` need: role, token count, whether the message is a digest, a user-marked
turn, a failing or elided tool result, which assistant message holds the call a tool result
answers, and the result's size in bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from foldlog import _core

if TYPE_CHECKING:
    from foldlog._core import CompactionPlan, PlanHistory

DIGEST_OPEN = "<compaction-summary>"
DIGEST_CLOSE = "</compaction-summary>"
DIGEST_HEADER = "Summary of earlier conversation (older messages were compacted to save context):"
ELIDED_PREFIX = "[elided tool result — "
_KEEP_MARKERS = ("[[keep]]", "[keep]", "<keep>", "<!-- keep -->")
_ERROR_PREFIXES = ("error:", "blocked:")
_ROLE_CODES = {"system": "s", "developer": "s", "user": "u", "assistant": "a", "tool": "t"}


def message_text(m: Mapping[str, Any]) -> str:
    """The text of a message: a string content, or its text blocks joined."""
    c = m.get("content")
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return "".join(str(b.get("text", "")) for b in c if isinstance(b, Mapping))
    return ""


def _head(text: str) -> str:
    # prefix tests only need the start: never strip or lowercase a whole tool output
    return text[:64].lstrip().lower()


def is_digest(m: Mapping[str, Any]) -> bool:
    return m.get("role") == "user" and _head(message_text(m)).startswith(DIGEST_OPEN)


def is_user_marked(m: Mapping[str, Any]) -> bool:
    return m.get("role") == "user" and _head(message_text(m)).startswith(_KEEP_MARKERS)


def is_error_result(m: Mapping[str, Any]) -> bool:
    return m.get("role") == "tool" and _head(message_text(m)).startswith(_ERROR_PREFIXES)


def is_elided(m: Mapping[str, Any]) -> bool:
    return m.get("role") == "tool" and message_text(m).startswith(ELIDED_PREFIX)


def call_ids(m: Mapping[str, Any]) -> list[str]:
    """The ids of the tool calls an assistant message makes."""
    calls = m.get("tool_calls") or ()
    return [str(c["id"]) for c in calls if isinstance(c, Mapping) and c.get("id")]


# --- token counts ----------------------------------------------------------------------------


class TokenCounter(Protocol):
    """Counts the tokens of each message (what the message adds to a prompt)."""

    def count(self, messages: Sequence[Mapping[str, Any]]) -> list[int]: ...


class EstimateCounter:
    """ESTIMATE ONLY — about four characters per token plus a few tokens of framing.

    Used until exact per-message counts are available (``session.token_counts()`` from the
    tokenizer work); never used for a decision that needs exact numbers, only to plan which
    messages to fold and how large the request will roughly be.
    """

    FRAMING = 4

    def count(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        return [self.count_one(m) for m in messages]

    def count_one(self, m: Mapping[str, Any]) -> int:
        chars = len(message_text(m))
        for c in m.get("tool_calls") or ():
            fn = c.get("function", c) if isinstance(c, Mapping) else {}
            chars += len(str(fn.get("name", ""))) + len(str(fn.get("arguments", ""))) + 8
        return chars // 4 + self.FRAMING

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        if not tools:
            return 0
        return len(json.dumps(list(tools), separators=(",", ":"))) // 4


class MessageCounter:
    """Adapts a tokenizer with ``count_message(message) -> int`` (``foldlog.tokens.Tokenizer``)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer

    def count(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        return [int(self.tokenizer.count_message(m)) for m in messages]


def model_counter(model: str | None) -> TokenCounter:
    """The exact counter of ``model`` when foldlog's tokenizers know it, else the estimate."""
    try:
        from foldlog.tokens import Tokenizer  # type: ignore[import-not-found,unused-ignore]

        tokenizer = Tokenizer.for_model(model or "")
        if tokenizer.exact:
            tokenizer.count_message({"role": "user", "content": ""})  # fails now if data is missing
            return MessageCounter(tokenizer)
    except Exception:  # no tokenizer module or data: planning still works on the estimate
        pass
    return EstimateCounter()


def token_counts(
    session: Any, messages: Sequence[Mapping[str, Any]], fallback: TokenCounter | None = None
) -> list[int]:
    """Exact per-message counts when the session offers them, else ``fallback`` (default: the
    estimate)."""
    exact = getattr(session, "token_counts", None)
    if callable(exact):
        counts = exact()
        if isinstance(counts, Sequence) and len(counts) == len(messages):
            return [int(c) for c in counts]
    return (fallback or EstimateCounter()).count(messages)


# --- planner input ---------------------------------------------------------------------------


def build_history(messages: Sequence[Mapping[str, Any]], tokens: Sequence[int]) -> PlanHistory:
    """The planner's view of ``messages`` (with ``tokens[i]`` the count of message i)."""
    if len(tokens) != len(messages):
        raise ValueError(f"{len(tokens)} token counts for {len(messages)} messages")
    roles: list[str] = []
    flags: list[int] = []
    callers: list[int] = []
    nbytes: list[int] = []
    owner: dict[str, int] = {}  # call id -> index of the assistant message that made it
    digest_flag, marked_flag = _core.PLAN_DIGEST, _core.PLAN_USER_MARKED
    error_flag, elided_flag = _core.PLAN_ERROR_RESULT, _core.PLAN_ELIDED
    for i, m in enumerate(messages):
        role = str(m.get("role"))
        code = _ROLE_CODES.get(role)
        if code is None:
            raise ValueError(f"message {i} has an unknown role {role!r}")
        roles.append(code)
        f = 0
        caller = -1
        size = 0
        if code == "u":
            head = _head(message_text(m))
            if head.startswith(DIGEST_OPEN):
                f |= digest_flag
            elif head.startswith(_KEEP_MARKERS):
                f |= marked_flag
        elif code == "a":
            if m.get("tool_calls"):
                for cid in call_ids(m):
                    owner[cid] = i
        elif code == "t":
            text = message_text(m)
            size = len(text) if text.isascii() else len(text.encode())
            if _head(text).startswith(_ERROR_PREFIXES):
                f |= error_flag
            if text.startswith(ELIDED_PREFIX):
                f |= elided_flag
            caller = owner.get(str(m.get("tool_call_id")), -1)
        flags.append(f)
        callers.append(caller)
        nbytes.append(min(size, 0xFFFF_FFFF))
    history = _core.PlanHistory()
    history.extend("".join(roles), [min(int(t), 0xFFFF_FFFF) for t in tokens], flags, callers, nbytes)
    return history


def plan_kwargs(options: Any, *, force: bool) -> dict[str, Any]:
    """The planner settings of an :class:`foldlog.Options` (or any object with its fields)."""
    return {
        "context_window": int(options.context_window or 0),
        "tail_tokens": int(options.tail_tokens),
        "min_recent_keep": int(options.min_recent_keep),
        "pinned_user_turn_tokens": int(options.pinned_user_turn_tokens),
        "min_fold_tokens": int(options.min_fold_tokens),
        "keep_policy": str(options.keep_policy),
        "force": force,
        "prune_min_bytes": int(options.prune_min_bytes),
    }


def plan(
    messages: Sequence[Mapping[str, Any]], tokens: Sequence[int], **settings: Any
) -> tuple[PlanHistory, CompactionPlan]:
    """Plans a compaction of ``messages``; ``settings`` are :meth:`PlanHistory.plan`'s keywords."""
    history = build_history(messages, tokens)
    return history, history.plan(**settings)


__all__ = [
    "DIGEST_CLOSE",
    "DIGEST_HEADER",
    "DIGEST_OPEN",
    "ELIDED_PREFIX",
    "EstimateCounter",
    "MessageCounter",
    "TokenCounter",
    "build_history",
    "call_ids",
    "is_digest",
    "is_elided",
    "is_error_result",
    "is_user_marked",
    "message_text",
    "model_counter",
    "plan",
    "plan_kwargs",
    "token_counts",
]
