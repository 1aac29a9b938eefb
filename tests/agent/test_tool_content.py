"""Tools that return content blocks (issue 14, deliverable 2): a list of blocks is logged as a
list, checked first (a malformed one is an error result naming the tool and the path, never a
crash), the output limit applies to the text parts, and lists that are data stay JSON text."""

from __future__ import annotations

from typing import Any

from agent_helpers import call, of_type, reply

from foldlog import Agent, Options, Session, tool
from foldlog.events import ToolResult
from foldlog.hooks import ToolOutcome, replace
from foldlog.providers import Scripted

URL = "data:image/png;base64,iVBORw0KGgo="
IMAGE = {"type": "image_url", "image_url": {"url": URL, "detail": "low"}}


def run_tool(session: Session, fn: Any, options: Options | None = None, sink: Any = None) -> dict[str, Any]:
    p = Scripted([reply("", call(fn.name, {}, "c1")), reply("done")])
    assert Agent(p, [fn], session, options, sink).run_sync("go") == "done"
    [res] = of_type(session, "tool/result")
    return dict(res["data"])


def test_a_tool_returning_blocks_logs_them_as_a_list(session: Session) -> None:
    @tool
    def shot() -> list[dict[str, Any]]:
        """Screenshot."""
        return [{"type": "text", "text": "the page"}, IMAGE]

    seen: list[Any] = []
    data = run_tool(session, shot, sink=seen.append)
    assert data["message"]["content"] == [{"type": "text", "text": "the page"}, IMAGE]
    assert not data["message"]["isError"]
    # front ends get a text rendering
    [shown] = [e for e in seen if isinstance(e, ToolResult)]
    assert shown.content == "the page\n[image]"
    # derived as the list of blocks, unchanged
    tool_msg = next(m for m in session.derive_messages() if m["role"] == "tool")
    assert tool_msg["content"][1]["image_url"]["url"] == URL


def test_tool_outcome_blocks_and_importer_style_images(session: Session) -> None:
    @tool
    def pdf() -> ToolOutcome:
        """A document and a picture."""
        return ToolOutcome(
            [
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBE"},
                },
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
            ]
        )

    data = run_tool(session, pdf)
    assert [b["type"] for b in data["message"]["content"]] == ["document", "image"]


def test_malformed_blocks_become_an_error_result_naming_the_tool_and_the_path(session: Session) -> None:
    @tool
    def bad() -> list[dict[str, Any]]:
        """Returns an image_url whose payload is a bare string."""
        return [{"type": "text", "text": "x"}, {"type": "image_url", "image_url": URL}]

    data = run_tool(session, bad)
    msg = data["message"]
    assert msg["isError"] and msg["content"].startswith("error: bad returned malformed content blocks:")
    assert "content[1].image_url" in msg["content"]


def test_malformed_outcomes_of_every_kind_never_crash(session: Session) -> None:
    cases: list[Any] = [
        [1, 2],  # not blocks at all
        [{"type": "image", "source": {"type": "base64", "media_type": "image/png"}}],  # no data
        [{"type": "text", "text": float("nan")}],
        [{"type": "file", "file": {"filename": "a.pdf"}}],
        [{"type": "text", "text": "ok"}, {"type": "video", "video": {}}],
        [],
    ]

    def returning(i: int, content: Any) -> Any:
        @tool(name=f"t{i}")
        def t() -> ToolOutcome:
            """Malformed."""
            return ToolOutcome(content)

        return t

    for i, content in enumerate(cases):
        s = Session(system="s")
        data = run_tool(s, returning(i, content))
        assert data["message"]["isError"], content
        assert "malformed content blocks" in data["message"]["content"], content


def test_the_output_limit_applies_to_the_text_parts(session: Session) -> None:
    big = "a" * 50_000 + "b" * 50_000

    @tool
    def shot() -> list[dict[str, Any]]:
        """Much text and an image."""
        return [{"type": "text", "text": big}, IMAGE, {"type": "text", "text": "tail"}]

    data = run_tool(session, shot, Options(tool_output_limit=4096))
    blocks = data["message"]["content"]
    assert blocks[1] == IMAGE  # image data is not text: kept whole
    assert (
        len(blocks[0]["text"].encode()) < 4096 + 200 and "bytes of tool output omitted" in blocks[0]["text"]
    )
    assert blocks[0]["text"].startswith("aaa") and blocks[0]["text"].endswith("bbb")
    assert blocks[2]["text"] == "tail"
    assert data["meta"]["omittedBytes"] > 90_000


def test_a_list_of_records_is_data_not_blocks(session: Session) -> None:
    @tool
    def ls() -> list[dict[str, Any]]:
        """Entries."""
        return [{"type": "file", "name": "a.py"}, {"type": "file", "name": "b.py"}]

    data = run_tool(session, ls)
    assert (
        data["message"]["content"] == '[{"type": "file", "name": "a.py"}, {"type": "file", "name": "b.py"}]'
    )


def test_a_post_execute_hook_may_replace_a_result_with_blocks(session: Session) -> None:
    @tool
    def plain() -> str:
        """Text."""
        return "text"

    p = Scripted([reply("", call("plain", {}, "c1")), reply("done")])
    agent = Agent(p, [plain], session)
    agent.hooks.tool_post_execute(lambda ctx, next: replace([{"type": "text", "text": "redacted"}, IMAGE]))
    agent.run_sync("go")
    [res] = of_type(session, "tool/result")
    assert res["data"]["message"]["content"] == [{"type": "text", "text": "redacted"}, IMAGE]
