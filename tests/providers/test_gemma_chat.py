"""Gemma's turn format, the reply grammar and the special-text guard, without loading the model."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldlog.providers.local.engine import SpecialTexts, _held
from foldlog.providers.local.gemma_chat import (
    CALL,
    Segment,
    Turn,
    call_line,
    parse_call,
    render,
    template_segments,
    to_turns,
)
from foldlog.providers.local.tool_grammar import reply_grammar
from foldlog.providers.local.turns import already_called

READ = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
}

A_TXT = '{"path":"a.txt"}'
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "What is in a.txt?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": A_TXT}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "hello\nworld\n"},
]


def test_turns_fold_the_system_prompt_into_the_first_user_turn_and_results_into_user_turns() -> None:
    turns = to_turns(HISTORY, [READ], examples=())
    assert [t.role for t in turns] == ["user", "model", "user"]
    assert turns[0].text.startswith("Be brief.\n\nYou can use these tools.")
    assert '- read_file {"path": "<string>"}: Read a file.' in turns[0].text
    assert turns[0].text.endswith("What is in a.txt?")
    assert turns[1].text == 'call read_file {"path": "a.txt"}'
    assert turns[2].text == (
        'Result of read_file {"path": "a.txt"} (2 lines):\nhello\nworld'
        "\n\nAnswer this using the result: What is in a.txt?"
    )


def test_render_is_gemmas_documented_format_with_markup_apart_from_text() -> None:
    segs = render([{"role": "user", "content": "hi <end_of_turn>"}], examples=())
    assert segs == [
        Segment("<bos>", True),
        Segment("<start_of_turn>user\n", True),
        Segment("hi <end_of_turn>"),  # a user's text stays text
        Segment("<end_of_turn>\n", True),
        Segment("<start_of_turn>model\n", True),
    ]


def test_worked_examples_come_first_with_the_one_most_like_the_question_last() -> None:
    turns = to_turns([{"role": "user", "content": "How many files are in the folder logs?"}], [READ])
    # only read_file is offered: the list_dir and grep examples are left out
    assert not any("list_dir" in t.text or "grep" in t.text for t in turns)
    assert turns[-1].text == "How many files are in the folder logs?"
    assert any(t.text.startswith("call read_file") for t in turns if t.role == "model")


@pytest.mark.local_model  # needs jinja2, which comes with the `local` extra only
def test_a_gguf_chat_template_renders_the_turns_with_texts_kept_apart() -> None:
    template = (
        "{{ bos_token }}{% for m in messages %}<start_of_turn>"
        "{{ 'model' if m['role'] == 'assistant' else 'user' }}\n{{ m['content'] }}<end_of_turn>\n"
        "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
    )
    turns = [Turn("user", "q <start_of_turn>"), Turn("model", "a"), Turn("user", "b")]
    got = template_segments(template, turns, "<bos>")
    documented = render([], examples=())[:1]  # <bos>
    assert got[0] == Segment("<bos><start_of_turn>user\n", True) and documented[0].text == "<bos>"
    assert [s.text for s in got if not s.markup] == ["q <start_of_turn>", "a", "b"]
    assert "".join(s.text for s in got) == (
        "<bos><start_of_turn>user\nq <start_of_turn><end_of_turn>\n<start_of_turn>model\na<end_of_turn>\n"
        "<start_of_turn>user\nb<end_of_turn>\n<start_of_turn>model\n"
    )


def test_call_lines_round_trip() -> None:
    line = call_line("read_file", '{"path":"a b.txt"}')
    assert line == 'call read_file {"path": "a b.txt"}'
    assert parse_call(line) == ("read_file", '{"path": "a b.txt"}')
    assert parse_call("The answer.") is None


def test_the_reply_grammar_parses_in_llama_cpp_and_names_only_offered_tools() -> None:
    pytest.importorskip("llama_cpp", reason="llama-cpp-python (the local extra) is not installed")
    from llama_cpp.llama_grammar import LlamaGrammar

    both = reply_grammar([READ])
    assert both.startswith("root ::= call | answer") and '"read_file "' in both
    assert "\\x00-\\x1F" in both  # no raw control character inside a JSON string
    for g in (both, reply_grammar([READ], answer=False), reply_grammar((), call=False)):
        LlamaGrammar.from_string(g, verbose=False)
    with pytest.raises(ValueError, match="not among the tools"):
        reply_grammar([READ], only="write_file")
    # the answer rule refuses any casing of a call's start
    assert "[Cc] [Aa] [Ll] ([^Ll] any*)?" in reply_grammar((), call=False)


def test_spelled_out_special_tokens_are_cut_and_their_start_held_back() -> None:
    guard = SpecialTexts({"<end_of_turn>", "<start_of_turn>", "[multimodal]"})
    assert guard.find("It is 4.<end_of_turn>more") == len("It is 4.")
    assert guard.find("a <b> tag") == -1
    assert guard.safe_len("answer <end_of") == len("answer ")
    assert guard.safe_len("a < b") == len("a < b")
    assert _held("one\n", ("\n\n",)) == len("one")
    assert _held("one", ("\n\n",)) == 3


def test_a_repeated_call_is_recognised_whatever_the_spacing() -> None:
    call = {"id": "1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}}
    history: list[dict[str, Any]] = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
    ]
    assert already_called(history, "read_file", json.dumps({"path": "a"}, separators=(",", ":")))
    assert not already_called(history, "read_file", '{"path": "b"}')
    # a new question starts afresh; the agent's bracketed notes do not
    assert not already_called([*history, {"role": "user", "content": "again"}], "read_file", '{"path":"a"}')
    assert already_called([*history, {"role": "user", "content": "[note]"}], "read_file", '{"path":"a"}')
    assert CALL == "call "
