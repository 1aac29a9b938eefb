"""Multimodal content on the send side (issue 14, deliverable 2): what reaches the endpoint over a
real loopback server, the mapping for chat completions (done once, by the core's send path: the
cached body and the Python encoding send the same bytes), and providers that cannot take a block
type failing before anything is sent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from foldlog import Agent, Options, Session, UnsupportedContentError, tool
from foldlog.providers import DeepSeek, OpenAI, OpenAICompatible, Request, RetryPolicy, collect
from foldlog.providers.content import TEXT_ONLY, ContentScan, non_text_blocks
from foldlog.providers.local.provider import LocalLlama
from tests.support.chat_server import chunk_obj, sse_lines
from tests.support.http_server import LoopbackServer, sse

FAST = RetryPolicy(base_delay=0.01, max_delay=0.05)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
DATA_URL = f"data:image/png;base64,{PNG}"
GOOD = sse_lines(
    [
        chunk_obj({"role": "assistant", "content": "A red pixel."}),
        chunk_obj({"content": ""}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 3}),
    ]
)


def call_reply(call_id: str, name: str, args: str = "{}") -> bytes:
    return sse_lines(
        [
            chunk_obj(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": args},
                        }
                    ],
                }
            ),
            chunk_obj({}, finish="tool_calls", usage={"prompt_tokens": 5, "completion_tokens": 3}),
        ]
    )


def importer_image() -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}


def image_session() -> Session:
    """A history as an importer writes it: a user message with an Anthropic-style image block
    and a PDF, and a tool result holding text and an image."""
    s = Session(system="You describe images.")
    s.add(
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this picture?"},
                importer_image(),
                {
                    "type": "document",
                    "title": "notes.pdf",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
                },
            ],
        }
    )
    s.add(
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}
            ],
        }
    )
    s.add(
        {
            "role": "tool",
            "tool_call_id": "c1",
            "name": "screenshot",
            "content": [{"type": "text", "text": "the screen"}, importer_image()],
        }
    )
    return s


def serve(provider_of: Any, s: Session, handlers: list[Any]) -> tuple[LoopbackServer, Any]:
    async def go() -> tuple[LoopbackServer, Any]:
        async with LoopbackServer(handlers) as srv:
            p = provider_of(srv.base_url)
            try:
                wire_style = p.wire_style()
                wire = s.wire_request(wire_style) if wire_style else None
                messages = wire.messages if wire is not None else s.wire_messages()
                request = Request(messages=messages, wire=wire, content=ContentScan().index(messages))
                try:
                    return srv, await collect(p.stream(request))
                except Exception as e:
                    return srv, e
            finally:
                await p.aclose()

    return asyncio.run(go())


def test_images_reach_a_chat_completions_endpoint_the_way_it_takes_them() -> None:
    s = image_session()
    srv, got = serve(lambda url: OpenAI(api_key="sk-test", base_url=url, retry=FAST), s, [sse(GOOD)])
    assert got.text == "A red pixel."
    (req,) = srv.requests
    messages = req.json()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
        {
            "type": "file",
            "file": {"filename": "notes.pdf", "file_data": "data:application/pdf;base64,JVBERi0x"},
        },
    ]
    # chat completions take only text in a tool message: the image follows in a user message
    assert messages[3]["content"].startswith("the screen\n[this result also holds 1 attachment(s) (image)")
    assert messages[4]["content"] == [
        {"type": "text", "text": "Attachments of the tool result c1 (screenshot):"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
    ]
    # the log keeps the blocks as they were recorded
    assert s.derive_messages()[1]["content"][1]["type"] == "image"


@pytest.mark.parametrize("style", ["keep", "strip", "with-calls"])
def test_the_cached_body_and_the_python_encoding_send_the_same_bytes(style: str) -> None:
    s = image_session()
    p = DeepSeek(api_key="sk-test", thinking=style == "with-calls")
    wire = s.wire_request(style)
    assert list(wire.messages) == s.wire_messages()
    python = p.encode_body(p.build_body(Request(messages=s.wire_messages())))
    if style == p.wire_style():
        cached = p.encode_request(Request(messages=wire.messages, wire=wire))
        assert not isinstance(cached, bytes) and cached.to_bytes() == python
    assert json.loads(python)["messages"][4]["content"][1]["image_url"]["url"] == DATA_URL


def test_a_text_only_provider_fails_before_sending_naming_the_message_and_block() -> None:
    s = image_session()
    srv, err = serve(lambda url: DeepSeek(api_key="sk-test", base_url=url, retry=FAST), s, [sse(GOOD)])
    assert isinstance(err, UnsupportedContentError) and isinstance(err, ValueError)
    assert srv.requests == []  # nothing was sent
    assert (err.index, err.role, err.block, err.block_type) == (1, "user", 1, "image_url")
    assert "messages[1] (user): content[1] is a 'image_url' block" in str(err)
    assert "DeepSeek" in str(err)


def test_a_generic_endpoint_takes_images_and_is_configurable() -> None:
    s = Session(system="s")
    s.add(
        {
            "role": "user",
            "content": [{"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}}],
        }
    )
    # default: text and images; audio is refused before sending
    srv, err = serve(lambda url: OpenAICompatible(url, None, "m", retry=FAST), s, [sse(GOOD)])
    assert isinstance(err, UnsupportedContentError) and srv.requests == []
    assert (err.index, err.block_type) == (1, "input_audio")
    # a model that takes audio: declared by the caller
    srv, got = serve(
        lambda url: OpenAICompatible(url, None, "m", retry=FAST, content_types=["image_url", "input_audio"]),
        s,
        [sse(GOOD)],
    )
    assert got.text == "A red pixel." and len(srv.requests) == 1
    assert OpenAI(api_key="k").content_types is not None and "file" in (
        OpenAI(api_key="k").content_types or ()
    )
    with pytest.raises(ValueError, match="content_types"):
        OpenAICompatible("http://x", None, "m", content_types="image_url")


def test_the_local_model_declares_it_reads_text_only() -> None:
    assert LocalLlama.content_types == TEXT_ONLY
    assert DeepSeek.content_types == TEXT_ONLY


def test_a_hand_built_request_is_checked_whole() -> None:
    s = image_session()

    async def go() -> BaseException | None:
        p = DeepSeek(api_key="sk-test", base_url="http://127.0.0.1:9/v1", retry=FAST)
        try:
            await collect(p.stream(Request(messages=s.wire_messages())))  # no content index given
        except UnsupportedContentError as e:
            return e
        finally:
            await p.aclose()
        return None

    err2 = asyncio.run(go())
    assert isinstance(err2, UnsupportedContentError) and err2.index == 1


# --- through the agent -----------------------------------------------------------------------


@tool(read_only=True)
def screenshot() -> list[dict[str, Any]]:
    """Take a screenshot."""
    return [{"type": "text", "text": "the login page"}, {"type": "image_url", "image_url": {"url": DATA_URL}}]


def test_a_screenshot_tool_reaches_the_model_as_an_image() -> None:
    s = Session(system="You look at screens.")

    async def go() -> LoopbackServer:
        async with LoopbackServer([sse(call_reply("c1", "screenshot")), sse(GOOD)]) as srv:
            p = OpenAICompatible(srv.base_url, None, "vision-1", retry=FAST)
            try:
                assert await Agent(p, [screenshot], s).run("what is on the screen?") == "A red pixel."
            finally:
                await p.aclose()
            return srv

    srv = asyncio.run(go())
    [result] = [e for e in s.events if e["type"] == "tool/result"]
    assert result["data"]["message"]["content"] == [
        {"type": "text", "text": "the login page"},
        {"type": "image_url", "image_url": {"url": DATA_URL}},
    ]
    sent = srv.requests[1].json()["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[3]["content"].startswith("the login page\n[this result also holds 1 attachment(s)")
    assert sent[4]["content"][1] == {"type": "image_url", "image_url": {"url": DATA_URL}}
    # reloaded, the session sends the same
    again = Session.from_bytes(s._core.to_bytes())
    assert again.wire_messages() == s.wire_messages()


def test_the_same_tool_against_a_text_only_model_ends_the_turn_before_sending() -> None:
    s = Session(system="s")

    async def go() -> tuple[LoopbackServer, BaseException | None]:
        async with LoopbackServer([sse(call_reply("c1", "screenshot")), sse(GOOD)]) as srv:
            p = DeepSeek(api_key="sk-test", base_url=srv.base_url, retry=FAST)
            try:
                await Agent(p, [screenshot], s, Options(max_steps=3)).run("look")
            except UnsupportedContentError as e:
                return srv, e
            finally:
                await p.aclose()
            return srv, None

    srv, err = asyncio.run(go())
    assert isinstance(err, UnsupportedContentError)
    assert len(srv.requests) == 1  # the first request only: the second never left
    assert err.role == "user" and err.block_type == "image_url"
    end = [e for e in s.events if e["type"] == "turn/end"][-1]["data"]["reason"]
    assert end["kind"] == "error" and "UnsupportedContentError" in end["message"]


def test_the_content_index_is_kept_incrementally_and_matches_a_full_scan() -> None:
    s = image_session()
    scan = ContentScan()
    for step in range(6):
        wire = s.wire_request("strip")
        index = scan.index(wire.messages)
        assert list(index.blocks) == non_text_blocks(list(wire.messages)), step
        if step == 3:
            s.replace([{"role": "system", "content": "new"}, {"role": "user", "content": [importer_image()]}])
        else:
            s.add({"role": "user", "content": [{"type": "text", "text": "more"}, importer_image()]})
            s.add({"role": "assistant", "content": "ok"})
