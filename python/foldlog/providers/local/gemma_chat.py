"""Gemma 3's own chat format, and the way tools, calls and results are shown to the local model.

Gemma has two roles, ``user`` and ``model``, each turn framed by its control tokens::

    <bos><start_of_turn>user
    {system prompt}

    {first user message}<end_of_turn>
    <start_of_turn>model
    {reply}<end_of_turn>

There is no system role: the system prompt goes at the top of the first user turn (Gemma's
documented format). There is no tool role either, so a tool's result is shown in a user turn
(``Result of read_file {"path": "notes.txt"}:`` and the output), and a call is a line of the
model's own turn::

    call read_file {"path": "notes.txt"}

``render`` returns the prompt as :class:`Segment` s: the format's markup (tokenized with its
special tokens) apart from every text that came from a message, a tool or a result (tokenized as
plain text: a ``<end_of_turn>`` written by a user, a file or the model stays text and cannot
close a turn). When the GGUF carries a chat template (``tokenizer.chat_template``) the turns are
rendered by it instead, with the same separation (see :func:`template_segments`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from foldlog.errors import LocalModelError

START = "<start_of_turn>"
END = "<end_of_turn>"
CALL = "call "
TOOLS_HEADER = (
    "You can use these tools. To use one, reply with one line: call <tool> <arguments as JSON>. "
    "You then get its result. When you know the answer, reply with the answer instead."
)
RESULT_HEADER = "Result of {call} ({lines}):\n"
# restated after results: the model answers (rather than calls again) more often with the question last
QUESTION_AFTER = "\n\nAnswer this using the result: {question}"


def _ex_call(n: int, name: str, args: str) -> dict[str, Any]:
    call = {"id": f"example-{n}", "type": "function", "function": {"name": name, "arguments": args}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _ex_result(n: int, text: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": f"example-{n}", "content": text}


# Worked examples shown before the conversation, each used when the tools it calls are offered.
# Gemma 3 270M (the pretrained model of the PyPI package, not an instruction-tuned one) follows
# a pattern it has seen far better than an instruction: these show the call line, the result
# and a short answer built from that result (quoting it where it can), and a question answered
# without a tool. The model also copies an example's content ("The first task is: buy milk." for
# a file of fruit): after a result, the provider withholds the examples' results' tokens that the
# conversation does not hold (LocalLlama.unseen_example_tokens).
Example = tuple[frozenset[str], Sequence[Mapping[str, Any]]]
"""A worked example: the tools it calls, and its messages (OpenAI chat shape)."""

EXAMPLES: tuple[Example, ...] = (
    (
        frozenset({"read_file"}),
        (
            {"role": "user", "content": "What is the timeout in the file settings.yaml?"},
            _ex_call(1, "read_file", '{"path": "settings.yaml"}'),
            _ex_result(1, "retries: 2\ntimeout: 30\n"),
            {"role": "assistant", "content": "The timeout is 30."},
        ),
    ),
    (
        frozenset(),
        (
            {"role": "user", "content": "What is the largest planet?"},
            {"role": "assistant", "content": "The largest planet is Jupiter."},
        ),
    ),
    (
        frozenset({"list_dir"}),
        (
            {"role": "user", "content": "How many files are in the folder src?"},
            _ex_call(2, "list_dir", '{"path": "src"}'),
            _ex_result(2, "main.py\nutil.py\n"),
            {"role": "assistant", "content": "There are 2 files in the folder src."},
        ),
    ),
    (
        frozenset({"grep"}),
        (
            {"role": "user", "content": "Which file contains the word tomato?"},
            _ex_call(3, "grep", '{"pattern": "tomato"}'),
            _ex_result(3, "recipes/soup.txt:1:tomato soup\n"),
            {"role": "assistant", "content": "The word tomato is in the file recipes/soup.txt."},
        ),
    ),
    (
        frozenset(),
        (
            {"role": "user", "content": "Who wrote Romeo and Juliet?"},
            {"role": "assistant", "content": "William Shakespeare wrote Romeo and Juliet."},
        ),
    ),
    (
        frozenset({"read_file"}),
        (
            {"role": "user", "content": "Read the file todo.txt and tell me what it contains."},
            _ex_call(4, "read_file", '{"path": "todo.txt"}'),
            _ex_result(4, "buy milk\nwater the plants\n"),
            {
                "role": "assistant",
                "content": 'The file todo.txt contains: "buy milk", "water the plants".',
            },
        ),
    ),
    (
        frozenset({"read_file"}),
        (
            {"role": "user", "content": "Which file holds the smaller number, a/one.txt or a/two.txt?"},
            _ex_call(5, "read_file", '{"path": "a/one.txt"}'),
            _ex_result(5, "8\n"),
            _ex_call(6, "read_file", '{"path": "a/two.txt"}'),
            _ex_result(6, "3\n"),
            {"role": "assistant", "content": "a/two.txt holds the smaller number: 3 is smaller than 8."},
        ),
    ),
)


def examples_for(
    tools: Sequence[Mapping[str, Any]],
    question: str = "",
    examples: Sequence[Example] = EXAMPLES,
    called: frozenset[str] = frozenset(),
) -> list[Mapping[str, Any]]:
    """The worked examples whose tools are all offered or ``called`` in the conversation (and the
    tool-free ones), the one most like ``question`` last: a small model follows the nearest
    pattern it has seen. Without them the pretrained model echoes the prompt instead of answering."""
    names = {str(t.get("function", t).get("name")) for t in tools} | called
    usable = [msgs for needs, msgs in examples if needs <= names]
    words = _words(question)
    usable.sort(key=lambda msgs: _similarity(words, _words(text_of(msgs[0].get("content")))))
    return [m for msgs in usable for m in msgs]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _similarity(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass(frozen=True, slots=True)
class Segment:
    """A piece of the prompt: ``markup`` is the format's own text (special tokens allowed)."""

    text: str
    markup: bool = False


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" or "model"
    text: str


def text_of(content: Any) -> str:
    """A message's content as text (text blocks joined; other blocks are not shown to this model)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        parts = [b.get("text", "") for b in content if isinstance(b, Mapping) and b.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str))
    return str(content)


def call_line(name: str, arguments: str) -> str:
    """How a call is written in the model's turn (what the grammar makes it produce)."""
    args = arguments.strip() or "{}"
    try:
        args = json.dumps(json.loads(args), ensure_ascii=False)  # one line, the model's own spacing
    except ValueError:
        pass
    return f"{CALL}{name} {args}"


def describe_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """The tool list shown in the first user turn: name, example arguments, description."""
    lines = [TOOLS_HEADER]
    for t in tools:
        fn = t.get("function", t)
        params = fn.get("parameters") or {}
        props: Mapping[str, Any] = params.get("properties") or {}
        required = list(params.get("required") or [])
        shown = {k: _placeholder(props[k]) for k in required if k in props}
        optional = [k for k in props if k not in required]
        line = f"- {fn['name']} {json.dumps(shown, ensure_ascii=False)}: {fn.get('description', '').strip()}"
        if optional:
            line += f" (optional: {', '.join(optional)})"
        lines.append(line)
    return "\n".join(lines)


def _placeholder(schema: Mapping[str, Any]) -> Any:
    kind = schema.get("type")
    desc = str(schema.get("description") or kind or "value")
    if kind == "string":
        return f"<{desc}>"
    if kind in ("integer", "number"):
        return 1
    if kind == "boolean":
        return True
    return f"<{desc}>"


def is_note(text: str) -> bool:
    """The agent's own bracketed notes (``[The step limit … ]``): instructions, not a question."""
    t = text.strip()
    return t.startswith("[") and t.endswith("]")


def to_turns(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]],
    *,
    examples: Sequence[Example] = EXAMPLES,
    examples_for_question: str | None = None,
) -> list[Turn]:
    """The conversation as alternating user/model turns (the first a user's).

    The system prompt and the tool list open the first user turn, followed by the worked
    examples (:data:`EXAMPLES` unless others are given). A call is its call line in the model's turn;
    its result is user text naming the call and its line count, after the question it serves
    (restated: the model copies what follows a question). Consecutive texts of one role are joined.
    """
    system = "\n\n".join(text_of(m.get("content")) for m in messages if m.get("role") == "system")
    preface = "\n\n".join(p for p in (system.strip(), describe_tools(tools) if tools else "") if p)
    asked = [text_of(m.get("content")) for m in messages if m.get("role") == "user"]
    latest = next((q for q in reversed(asked) if q.strip() and not is_note(q)), "")
    if examples_for_question is not None:
        latest = examples_for_question
    shown = [
        *examples_for(tools, latest, examples, _called(messages)),
        *(m for m in messages if m.get("role") != "system"),
    ]
    calls: dict[str, str] = {}
    question = ""
    turns: list[Turn] = []

    def add(role: str, text: str) -> None:
        if turns and turns[-1].role == role:
            turns[-1] = Turn(role, f"{turns[-1].text}\n\n{text}" if text else turns[-1].text)
        else:
            turns.append(Turn(role, text))

    for m in shown:
        role = m.get("role")
        if role == "user":
            text = text_of(m.get("content"))
            if text.strip() and not is_note(text):
                question = text.strip()
            add("user", text)
        elif role == "assistant":
            parts = [text_of(m.get("content")).strip()]
            for c in m.get("tool_calls") or ():
                fn = c.get("function") or {}
                line = call_line(str(fn.get("name", "")), str(fn.get("arguments") or ""))
                calls[str(c.get("id"))] = line[len(CALL) :]
                parts.append(line)
            add("model", "\n".join(p for p in parts if p))
        elif role == "tool":
            call = calls.get(str(m.get("tool_call_id")), str(m.get("name") or "the tool"))
            result = text_of(m.get("content")).rstrip("\n")
            n = result.count("\n") + 1 if result else 0
            text = RESULT_HEADER.format(call=call, lines=f"{n} line{'' if n == 1 else 's'}") + result
            if question:
                text += QUESTION_AFTER.format(question=question)
            add("user", text)
    if not turns or turns[0].role != "user":
        turns.insert(0, Turn("user", ""))
    if preface:
        first = turns[0]
        turns[0] = Turn("user", f"{preface}\n\n{first.text}" if first.text else preface)
    return turns


def render(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] = (),
    *,
    template: str | None = None,
    bos: str = "<bos>",
    examples_for_question: str | None = None,
    examples: Sequence[Example] = EXAMPLES,
) -> list[Segment]:
    """The prompt for the model's next turn, ending with the open ``model`` turn.
    ``examples_for_question``: order the worked examples for this question instead of the last."""
    turns = to_turns(messages, tools, examples=examples, examples_for_question=examples_for_question)
    if template:
        return template_segments(template, turns, bos)
    out = [Segment(bos, True)]
    for t in turns:
        out += [Segment(f"{START}{t.role}\n", True), Segment(t.text), Segment(f"{END}\n", True)]
    out.append(Segment(f"{START}model\n", True))
    return out


def template_segments(template: str, turns: Sequence[Turn], bos: str) -> list[Segment]:
    """Render ``turns`` with a GGUF's Jinja chat template, keeping their texts apart from markup.

    Each text is replaced by a unique placeholder before rendering, then the rendered string is
    split back around the placeholders: the template decides the markup, the texts stay text.
    """
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    tag = uuid.uuid4().hex
    holders = [f"\x00{tag}:{i}\x00" for i in range(len(turns))]
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    rendered = env.from_string(template).render(
        messages=[
            {"role": "assistant" if t.role == "model" else "user", "content": h}
            for t, h in zip(turns, holders, strict=True)
        ],
        bos_token=bos,
        add_generation_prompt=True,
    )
    out: list[Segment] = []
    rest = rendered
    for t, h in zip(turns, holders, strict=True):
        before, found, rest = rest.partition(h)
        if not found:
            raise LocalModelError("the model's chat template dropped a message; it cannot be used")
        out += [Segment(before, True), Segment(t.text)]
    out.append(Segment(rest, True))
    return [s for s in out if s.text]


def parse_call(text: str) -> tuple[str, str] | None:
    """``(name, arguments)`` of a reply that is a call line, else ``None`` (an answer)."""
    if not text.startswith(CALL):
        return None
    name, _, args = text[len(CALL) :].partition(" ")
    return name, args.strip()


def shown_texts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """What the messages show the model, text by text: contents, call lines and results."""
    out = [text_of(m.get("content")) for m in messages]
    for m in messages:
        for c in m.get("tool_calls") or () if m.get("role") == "assistant" else ():
            fn = c.get("function") or {}
            out.append(call_line(str(fn.get("name", "")), str(fn.get("arguments") or "")))
    return [t for t in out if t]


def example_results(examples: Sequence[Example]) -> list[str]:
    """What the worked examples' tools returned: the content an answer could copy from them."""
    return [text_of(m.get("content")) for _, msgs in examples for m in msgs if m.get("role") == "tool"]


def _called(messages: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The tools called in the conversation (their examples stay when no tools are offered)."""
    return frozenset(
        str((c.get("function") or {}).get("name"))
        for m in messages
        if m.get("role") == "assistant"
        for c in m.get("tool_calls") or ()
    )
