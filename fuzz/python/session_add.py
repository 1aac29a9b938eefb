"""`Session.add` with message dicts built from the input: a message is recorded or refused with
a FoldlogError (nothing written then); the log it writes reloads to the same derived messages."""

from __future__ import annotations

import json
from typing import Any

from foldlog import Session
from foldlog._core import Log
from foldlog.errors import FoldlogError

ROLES: list[Any] = ["system", "user", "assistant", "tool", "assistant", "tool", "", "bot", None, 3]
KEYS = ["content", "tool_calls", "tool_call_id", "toolCallId", "name", "isError", "reasoning_content", "x"]


class Input:
    """Reads values out of the fuzz input; past its end every read is 0 (deterministic)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        b = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return b

    def more(self) -> bool:
        return self.pos < len(self.data)

    def text(self) -> str:
        n = self.byte() % 24
        raw = self.data[self.pos : self.pos + n]
        self.pos += n
        # surrogateescape keeps invalid UTF-8 as lone surrogates: strings JSON cannot encode
        return raw.decode("utf-8", "surrogateescape")

    def value(self, depth: int = 0) -> Any:
        kind = self.byte() % (12 if depth < 3 else 8)
        if kind == 0:
            return None
        if kind == 1:
            return self.byte() % 2 == 0
        if kind == 2:
            return self.byte() - 128
        if kind == 3:
            return [2**63, 2**64, -(2**63) - 1, 10**30][self.byte() % 4]
        if kind == 4:
            return [0.5, float("nan"), float("inf"), -0.0][self.byte() % 4]
        if kind in (5, 6, 7):
            return self.text()
        if kind in (8, 9):
            return [self.value(depth + 1) for _ in range(self.byte() % 4)]
        if kind == 10:
            return {self.text(): self.value(depth + 1) for _ in range(self.byte() % 4)}
        return {(self.byte(), b"k", ("t",))[self.byte() % 3]: self.value(depth + 1)}

    def call(self) -> Any:
        if self.byte() % 8 == 0:
            return self.value(1)
        call: dict[str, Any] = {"id": f"call_{self.byte() % 4}", "type": "function"}
        args = self.text() if self.byte() % 2 else json.dumps({"q": self.text()})[: self.byte() % 16]
        call["function"] = {"name": self.text() if self.byte() % 3 else "", "arguments": args}
        return call

    def message(self) -> Any:
        if self.byte() % 16 == 0:
            return self.value()
        m: dict[str, Any] = {}
        role = ROLES[self.byte() % len(ROLES)]
        if role is not None:
            m["role"] = role
        for _ in range(self.byte() % 4):
            key = KEYS[self.byte() % len(KEYS)]
            if key == "tool_calls" and self.byte() % 4:
                m[key] = [self.call() for _ in range(self.byte() % 3)]
            elif key in ("tool_call_id", "toolCallId") and self.byte() % 2:
                m[key] = f"call_{self.byte() % 4}"
            else:
                m[key] = self.value()
        return m


def check(data: bytes) -> None:
    source = Input(data)
    s = Session(id="fuzz")
    while source.more():
        message = source.message()
        before = len(s.events)
        try:
            s.add(message)
        except FoldlogError:
            assert len(s.events) == before, f"a refused message was recorded: {message!r}"
            continue
        assert len(s.events) == before + 1, "add recorded more than one event"
    derived = s._core.derived().items(0, 1 << 30)
    reloaded, _ = Log.parse(s._core.to_bytes())
    assert reloaded.derived().items(0, 1 << 30) == derived, "the written log reloads to other messages"
    s.derive_messages()
    json.loads(s.wire_json())


if __name__ == "__main__":
    from _run import fuzz

    fuzz(check)
