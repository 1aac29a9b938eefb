"""The log's event types are spelled in one place (`foldlog.log.grammar.kinds`, and the Rust core):
every other module names them through its constants, so grepping a constant finds every writer and
reader of a kind. A string literal equal to an event type, a prefix of one (``"compaction/"`` for a
``startswith``), or a byte literal holding one (a store's byte scanner) anywhere else in the package
is a second spelling."""

from __future__ import annotations

import ast
from pathlib import Path

import foldlog
from foldlog.log.grammar.kinds import ALL_KINDS

PACKAGE = Path(foldlog.__file__).parent
GRAMMAR = PACKAGE / "log" / "grammar"

#: ``"compaction/"``, ``"tool/"``, …: the families of the kinds, as a ``startswith`` would spell them
FAMILIES = frozenset(kind[: kind.index("/") + 1] for kind in ALL_KINDS)


def _spells_a_kind(value: str | bytes) -> bool:
    if isinstance(value, str):
        return value in ALL_KINDS or (value.endswith("/") and any(k.startswith(value) for k in ALL_KINDS))
    # a byte scanner: the whole kind anywhere, or a family right after a quote (``b'"type":"turn/'``)
    return any(kind.encode() in value for kind in ALL_KINDS) or any(
        quote + family.encode() in value for family in FAMILIES for quote in (b'"', b"'")
    )


def spellings(source: str) -> list[tuple[int, str]]:
    """``(line, literal)`` of each literal in ``source`` that spells an event type."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str | bytes)
            and _spells_a_kind(node.value)
        ):
            found.append((node.lineno, repr(node.value)))
    return sorted(found)


def test_the_checker_finds_every_way_of_spelling_a_kind() -> None:
    source = "\n".join(
        [
            'a = "tool/result"',
            'b = kind.startswith("compaction/")',
            'c = re.compile(rb\'"type"\\s*:\\s*"turn/start"\')',
            "d = b'\"step/'",
            'e = f"request/{suffix}"',
            '"""A docstring may name tool/result and compaction/summary."""',
            'f = "/home/user/notes"',
            'g = b"/home/user/notes"',
            'h = "session"',
        ]
    )
    assert [line for line, _ in spellings(source)] == [1, 2, 3, 4, 5]


def test_event_types_are_spelled_only_in_the_grammar() -> None:
    assert GRAMMAR.is_dir()
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if GRAMMAR in path.parents:
            continue
        for line, literal in spellings(path.read_text(encoding="utf-8")):
            spelled.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {literal}")
    listing = "\n".join(spelled)
    assert not spelled, f"event types spelled outside foldlog.log.grammar (use its kinds):\n{listing}"
