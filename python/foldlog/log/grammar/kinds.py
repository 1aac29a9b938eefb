"""The event types of the log (docs/log-format.md, "Event types"): the only place outside the
Rust core where they are spelled. Every other module names them through these constants, so a
reader finds every writer and reader of a kind by grepping its name.

This module imports nothing: it is shared vocabulary, importable from every layer (the stores'
byte scanners use it too).
"""

from __future__ import annotations

from typing import Final

SYSTEM_MESSAGE: Final = "system/message"
USER_MESSAGE: Final = "user/message"
ASSISTANT_MESSAGE: Final = "assistant/message"
ASSISTANT_CHUNK: Final = "assistant/chunk"
TOOL_CALL: Final = "tool/call"
TOOL_RESULT: Final = "tool/result"
TURN_START: Final = "turn/start"
TURN_END: Final = "turn/end"
STEP_START: Final = "step/start"
STEP_END: Final = "step/end"
REQUEST_HEADER: Final = "request/header"
COMPACTION_START: Final = "compaction/start"
COMPACTION_SUMMARY: Final = "compaction/summary"
COMPACTION_END: Final = "compaction/end"
OUTPUT_VALIDATED: Final = "output/validated"
#: a paused turn's calls waiting for a person (docs/durable-runs.md), and a person's answer
APPROVAL_REQUEST: Final = "approval/request"
APPROVAL_ANSWER: Final = "approval/answer"
#: which events' content was erased, why and when (docs/log-format.md, "Erasure")
ERASURE: Final = "log/erasure"

#: the kinds that hold a message and take part in the surface (``surfaceOp`` required)
MESSAGE_KINDS: Final = frozenset({SYSTEM_MESSAGE, USER_MESSAGE, ASSISTANT_MESSAGE, TOOL_RESULT})

#: every kind this version writes
ALL_KINDS: Final = frozenset(
    {
        SYSTEM_MESSAGE,
        USER_MESSAGE,
        ASSISTANT_MESSAGE,
        ASSISTANT_CHUNK,
        TOOL_CALL,
        TOOL_RESULT,
        TURN_START,
        TURN_END,
        STEP_START,
        STEP_END,
        REQUEST_HEADER,
        COMPACTION_START,
        COMPACTION_SUMMARY,
        COMPACTION_END,
        OUTPUT_VALIDATED,
        APPROVAL_REQUEST,
        APPROVAL_ANSWER,
        ERASURE,
    }
)

__all__ = [
    "ALL_KINDS",
    "APPROVAL_ANSWER",
    "APPROVAL_REQUEST",
    "ASSISTANT_CHUNK",
    "ASSISTANT_MESSAGE",
    "COMPACTION_END",
    "COMPACTION_START",
    "COMPACTION_SUMMARY",
    "ERASURE",
    "MESSAGE_KINDS",
    "OUTPUT_VALIDATED",
    "REQUEST_HEADER",
    "STEP_END",
    "STEP_START",
    "SYSTEM_MESSAGE",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "USER_MESSAGE",
]
