"""GBNF grammars for the local model's replies: an answer, or one call of a real tool with valid arguments.

A reply is either a call line (``call <tool> <JSON arguments>``, see
:mod:`foldlog.providers.local.gemma_chat`) or an answer, which is any text that does not start like a
call. The grammar lets the model choose (``tool_choice`` ``auto``), forces a call (``required``,
or one named tool) or forbids one (no tools, ``none``: the grace step's answer cannot be a call
written as text). Each tool's arguments follow its JSON schema, converted by llama-cpp-python's
``SchemaConverter`` (the reference converter of llama.cpp's JSON-schema support).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from foldlog.errors import ConfigError
from foldlog.providers.local.gemma_chat import CALL

ANY_CHAR = r"[^\x00]"
# JSON forbids raw control characters inside strings; some converter versions allow them
JSON_CHAR = (
    r'char ::= [^"\\\x00-\x1F\x7F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'
)


def gbnf_literal(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _not_starting_with(word: str) -> str:
    """A rule body matching any non-empty text that does not start with ``word`` in any case."""

    def cls(ch: str, negate: bool) -> str:
        chars = "".join(sorted({ch.lower(), ch.upper()}))
        return f"[{'^' if negate else ''}{chars}]"

    alts = []
    for i, ch in enumerate(word):
        head = " ".join(cls(c, False) for c in word[:i])
        other = f"{cls(ch, True)} any*"
        alts.append(f"{head} ({other})?" if i else other)
    return " | ".join(alts)


def _rule_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-zA-Z0-9]+", "-", name).strip("-").lower() or "tool"
    rule, n = f"{base}-args", 1
    while rule in taken:
        n += 1
        rule = f"{base}-{n}-args"
    taken.add(rule)
    return rule


def reply_grammar(
    tools: Sequence[Mapping[str, Any]],
    *,
    call: bool = True,
    answer: bool = True,
    only: str | None = None,
    answer_schema: Mapping[str, Any] | None = None,
) -> str:
    """The grammar of one reply. ``call``/``answer``: which kinds are allowed; ``only``: the one
    tool a call must name; ``answer_schema``: an answer is JSON valid for this schema (a typed
    run's ``response_format``) instead of free text."""
    from llama_cpp import llama_grammar

    # llama-cpp-python's converter is untyped
    SchemaConverter: Any = llama_grammar.SchemaConverter

    if not (call or answer):
        raise ConfigError("a reply must be allowed to be a call or an answer")
    fns = [t.get("function", t) for t in tools]
    if only is not None:
        fns = [f for f in fns if f.get("name") == only]
        if not fns:
            raise ConfigError(f"tool_choice names {only!r}, which is not among the tools offered")
    if call and not fns:
        call = False
    roots = []
    rules = [f"any ::= {ANY_CHAR}"]
    # arguments in the order the tools list them (required first), as the prompt shows them
    order: dict[str, int] = {}
    for params in [f.get("parameters") or {} for f in (fns if call else ())] + [answer_schema or {}]:
        for key in [*(params.get("required") or ()), *(params.get("properties") or {})]:
            order.setdefault(str(key), len(order))
    converter = SchemaConverter(prop_order=order, allow_fetch=False, dotall=False, raw_pattern=False)
    if call:
        taken: set[str] = set()
        alts = []
        for fn in fns:
            schema = dict(fn.get("parameters") or {"type": "object", "properties": {}})
            rule = _rule_name(str(fn["name"]), taken)
            converter.visit(converter.resolve_refs(schema, f"tool {fn['name']}"), rule)
            alts.append(f"{gbnf_literal(str(fn['name']) + ' ')} {rule}")
        rules.append(f"call ::= {gbnf_literal(CALL)} ({' | '.join(alts)})")
        roots.append("call")
    if answer and answer_schema is not None:
        schema = json.loads(json.dumps(answer_schema))
        converter.visit(converter.resolve_refs(schema, "the answer schema"), "answer-json")
        rules.append("answer ::= answer-json")
        roots.append("answer")
    elif answer:
        rules.append(f"answer ::= {_not_starting_with(CALL.strip())}")
        roots.append("answer")
    if call or answer_schema is not None:
        rules.append(re.sub(r"(?m)^char ::= .*$", lambda _: JSON_CHAR, converter.format_grammar()))
    return f"root ::= {' | '.join(roots)}\n" + "\n".join(rules) + "\n"
