"""The tool histories tests and benches build: a question, steps of one tool call and its result,
an answer. One builder, parameterised by what the copies varied (names, ids, sizes, turn events),
and the shapes several of them share, so a bench and the test that checks its figure hold the
same history."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from foldlog import Session


def tool_call(call_id: str, name: str, arguments: str = "{}") -> dict[str, Any]:
    """One OpenAI-style function call."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def add_tool_steps(
    s: Session,
    calls: int,
    *,
    user: str,
    tool: str,
    result: Callable[[int], str],
    arguments: Callable[[int], str] = lambda k: "{}",
    id_prefix: str = "c",
    answer: str | None = "done",
    turn: int | None = None,
) -> None:
    """Append ``user``'s question, ``calls`` steps of one ``tool`` call (id ``{id_prefix}{k}``)
    answered by ``result(k)``, then ``answer`` (``None``: none).

    ``turn``: record it as that finished turn, as the agent does: ``turn/start`` and ``turn/end``
    around it, ``step/start`` and ``step/end`` around each tool step.
    """
    if turn is not None:
        s.append_event("turn/start", {"turn": turn})
    s.add({"role": "user", "content": user})
    for k in range(calls):
        if turn is not None:
            s.append_event("step/start", {"turn": turn, "step": k + 1})
        call_id = f"{id_prefix}{k}"
        s.add({"role": "assistant", "content": "", "tool_calls": [tool_call(call_id, tool, arguments(k))]})
        s.add({"role": "tool", "tool_call_id": call_id, "name": tool, "content": result(k)})
        if turn is not None:
            s.append_event("step/end", {"turn": turn, "step": k + 1})
    if answer is not None:
        s.add({"role": "assistant", "content": answer})
    if turn is not None:
        s.append_event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})


def noop_turn(s: Session, steps: int) -> None:
    """B10's finished turn of ``steps`` steps: ``steps - 1`` calls of ``noop`` with short results,
    then an answer, inside turn and step events."""
    add_tool_steps(
        s,
        steps - 1,
        user="Look at the workspace and report what you find.",
        tool="noop",
        arguments=lambda k: f'{{"i":{k}}}',
        result=lambda k: f"result {k}: ok",
        id_prefix="h",
        answer="Everything is in order.",
        turn=1,
    )


def read_file_history(calls: int = 20) -> Session:
    """A question, ``calls`` calls of ``read_file`` with 520-byte text results, the answer."""
    s = Session(system="You are a careful assistant.")
    add_tool_steps(
        s,
        calls,
        user="list the files and read them " * 3,
        tool="read_file",
        arguments=lambda k: f'{{"n":{k}}}',
        result=lambda k: "line of text\n" * 40,
    )
    return s


def three_ls_calls(s: Session) -> None:
    """ "list the files": three ``ls`` calls answered ``file0``..``file2``, then "three files"."""
    add_tool_steps(s, 3, user="list the files", tool="ls", result=lambda k: f"file{k}", answer="three files")
