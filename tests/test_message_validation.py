"""Messages are checked on every write path, in the core (issue 14, item 4): known role; content
a string or a list of blocks (mappings with a string ``type``); ``tool_calls`` a list of
``{id, name, arguments}``; tool messages with their ``tool_call_id``. Errors name the place."""

from __future__ import annotations

import re
from typing import Any

import pytest

from foldlog import InvalidEventError, Session

# the cases: each used to be recorded (changed, or sent as is, or dropped later)
REFUSED: list[tuple[dict[str, Any], str]] = [
    (
        {"role": "user", "content": 42},
        "content must be a string or a list of content blocks, got a number (42)",
    ),
    (
        {"role": "user", "content": {"a": 1}},
        "content must be a string or a list of content blocks, got an object",
    ),
    ({"role": "user", "content": None}, "content must be a string or a list of content blocks, got null"),
    ({"role": "user", "content": [1, 2]}, "content[0] must be a content block"),
    (
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"text": "b"}]},
        "content[1].type is missing",
    ),
    ({"role": "assistant", "content": "x", "tool_calls": "nope"}, "tool_calls must be a list of tool calls"),
    (
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c", "type": "function", "function": {"arguments": "{}"}}],
        },
        "tool_calls[0].function.name is missing",
    ),
    (
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "f", "arguments": 3}]},
        "tool_calls[0].arguments must be a string (JSON text) or an object",
    ),
    ({"role": "tool", "content": "out"}, "toolCallId is missing"),
    ({"role": "developer", "content": "x"}, 'unknown message role "developer"'),
]


@pytest.mark.parametrize(("message", "says"), REFUSED)
def test_add_refuses_naming_the_place(message: dict[str, Any], says: str) -> None:
    s = Session(system="s")
    with pytest.raises(InvalidEventError, match=re.escape(says)):
        s.add(message)
    assert len(s) == 1 and len(s.derive_messages()) == 1


@pytest.mark.parametrize(("message", "says"), REFUSED[:-1])
def test_append_event_and_replace_refuse_the_same(message: dict[str, Any], says: str) -> None:
    s = Session(system="s")
    role = message["role"]
    if role == "user":
        kind, data = "user/message", message
    elif role == "assistant":
        kind, data = "assistant/message", {"turn": 1, "step": 1, "message": message}
    else:
        kind, data = "tool/result", {"turn": 1, "step": 1, "message": message}
    with pytest.raises(InvalidEventError, match=re.escape(says)):
        s.append_event(kind, data, surface_op="append")
    with pytest.raises(InvalidEventError, match=re.escape(says)):
        s.replace([{"role": "system", "content": "s"}, message])
    assert len(s) == 1


def test_real_shapes_are_recorded_as_given() -> None:
    s = Session(system="s")
    accepted = [
        {"role": "user", "content": "hi", "name": "ann"},
        # what the agent writes: function-style calls with raw (here cut) argument text
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "think",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"path": "/tm'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "ls", "content": "a\nb"},
        # the flat form, arguments as an object, content None with calls, a call without an id
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c2", "name": "cat", "arguments": {"path": "a"}},
                {"type": "function", "function": {"name": "", "arguments": ""}},
            ],
        },
        {"role": "tool", "toolCallId": "c2", "toolName": "cat", "content": "A", "isError": False},
        # OpenAI SDK dumps carry explicit nulls for what is absent
        {"role": "assistant", "content": "done", "tool_calls": None, "refusal": None},
    ]
    for m in accepted:
        s.add(m)
    assert s.events[4]["data"]["message"]["content"] is None, "None is recorded, not turned into ''"
    derived = s.derive_messages()
    assert derived[2]["tool_calls"][0]["function"]["arguments"] == '{"path": "/tm'
    assert derived[4]["tool_calls"][0]["function"]["arguments"] == '{"path":"a"}'
    assert derived[4]["tool_calls"][1]["id"] == "call_4_1"
