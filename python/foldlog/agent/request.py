"""One request of a step: its params, the ``request/header`` event, the messages (with the
core's cached wire JSON when the provider sends it), and the reply read from the stream.

Every request carries exactly ``session.wire_messages()`` at that moment; the header event is
logged on the first request and whenever the model, the tools or the params change.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from foldlog.errors import InvariantError, StreamInterrupted
from foldlog.events import Reasoning, Text, ToolDispatch
from foldlog.hooks import StreamContext, run_waterfall, stream_decision
from foldlog.log.grammar import kinds
from foldlog.log.text import SurrogateJoiner, clean_text
from foldlog.providers.base import ProviderBase, Request, chunk_data, declared
from foldlog.providers.content import ContentScan

if TYPE_CHECKING:
    from foldlog.agent.loop import Agent
    from foldlog.agent.recorder import Reply, StepRecorder
    from foldlog.log.session import Session
    from foldlog.providers.base import Provider

_UNSET = object()


@dataclass(frozen=True, slots=True)
class Params:
    """A step's request parameters once the ``request`` hook has had them."""

    model: str | None
    max_tokens: int | None
    temperature: float | None
    extra: dict[str, Any]  # provider params a hook added (``tool_choice``, …)

    @classmethod
    def split(cls, params: Mapping[str, Any]) -> Params:
        rest = dict(params)
        return cls(rest.pop("model", None), rest.pop("max_tokens", None), rest.pop("temperature", None), rest)

    def header(self) -> dict[str, Any]:
        """The ``params`` of the ``request/header`` event (the unset ones left out)."""
        known = {"max_tokens": self.max_tokens, "temperature": self.temperature}
        return {**{k: v for k, v in known.items() if v is not None}, **self.extra}


class Requests:
    """Builds the requests of one agent's session for its provider."""

    def __init__(self, session: Session, provider: Provider) -> None:
        self.session = session
        self.provider = provider
        self._content = ContentScan()  # the non-text blocks of the requests, kept incrementally
        self._header: str | None = _last_header(session)
        self._header_tools: Any = None
        self._header_model: Any = _UNSET
        self._header_params: dict[str, Any] = {}

    @property
    def model(self) -> str | None:
        """The model the latest request named (what its ``request/header`` says, read as the
        log's reader reads it: a model that is not a string is unknown)."""
        model = self._header_model
        return model if isinstance(model, str) else None

    def log_header(self, recorder: StepRecorder, params: Params, tools: Sequence[Mapping[str, Any]]) -> None:
        """Log ``request/header`` when the model, the tools or the params changed."""
        header = params.header()
        model = params.model
        if tools is self._header_tools and model == self._header_model and header == self._header_params:
            return
        data = {"model": model, "tools": [dict(t) for t in tools], "params": header}
        key = json.dumps(data, sort_keys=True, default=str)
        self._header_tools, self._header_model, self._header_params = tools, model, header
        if key != self._header:
            self._header = key
            recorder.events.request_header(json.loads(key))

    def build(self, params: Params, tools: Sequence[Mapping[str, Any]]) -> Request:
        """The request for the session as it is now (flushed: the header and claimed input are
        in the log before anything reaches the model)."""
        abilities = declared(self.provider)
        style = abilities.wire_style()
        wire = self.session.wire_request(style) if style is not None else None
        messages = wire.messages if wire is not None else self.session.wire_messages()
        return Request(
            messages=messages,
            tools=tools,
            model=params.model,
            max_tokens=params.max_tokens,
            temperature=params.temperature,
            params=params.extra,
            wire=wire,
            # indexed only for a provider that checks what it can send (a cost per request)
            content=self._content.index(messages) if abilities.content_types is not None else None,
        )

    def check_invariant(self, request: Request) -> None:
        if list(request.messages) != list(self.session.wire_messages()):
            raise InvariantError(
                "foldlog invariant broken: the request messages differ from session.wire_messages()"
            )


async def read_stream(
    stream: AsyncIterator[Any],
    reply: Reply,
    recorder: StepRecorder,
    emit: Callable[[Any], None],
    turn: int,
    step: int,
) -> Reply:
    """Read a provider stream into ``reply``, telling the sink as it goes (and recording each
    chunk when ``reply.chunks`` is kept). Raises `StreamInterrupted` for a stream that ended
    without a finish reason."""
    recorded = reply.chunks
    # text is made valid Unicode as it comes (a pair split across pieces joined, a lone surrogate
    # replaced: `foldlog.log.text`), so what the sink shows and the log keeps never holds one
    text, reasoning = SurrogateJoiner(), SurrogateJoiner()
    try:
        async for chunk in stream:
            kind = chunk.kind
            if kind in ("text", "reasoning"):
                piece = (text if kind == "text" else reasoning).feed(chunk.text)
                if not piece:
                    continue
                if piece != chunk.text:
                    chunk = dataclasses.replace(chunk, text=piece)
            elif kind == "tool_call" and not chunk.call.arguments.isascii():
                args = clean_text(chunk.call.arguments)[0]
                chunk = dataclasses.replace(chunk, call=dataclasses.replace(chunk.call, arguments=args))
            if recorded is not None:
                recorded.append(recorder.events.chunk(turn, step, chunk_data(chunk)))
            if kind == "text":
                reply.text.append(chunk.text)
                emit(Text(chunk.text, turn, step))
            elif kind == "reasoning":
                reply.reasoning.append(chunk.text)
                emit(Reasoning(chunk.text, turn, step))
            elif kind == "thinking_block":
                reply.thinking_blocks.append(chunk.block)
            elif kind == "tool_call_start":
                emit(ToolDispatch(chunk.id, chunk.name, "", partial=True))
            elif kind == "tool_call":
                reply.calls.append(chunk.call)
            elif kind == "usage":
                reply.usage = chunk.usage
            elif kind == "done":
                reply.finish = chunk.finish_reason
            elif kind == "error":
                raise chunk.error
    finally:
        # a high surrogate held back at the end had no pair: U+FFFD (an interrupted reply keeps it)
        for joiner, pieces in ((text, reply.text), (reasoning, reply.reasoning)):
            rest = joiner.flush()
            if rest:
                pieces.append(rest)
        aclose = getattr(stream, "aclose", None)  # an async generator's; a plain iterator has none
        if aclose is not None:
            await aclose()
    if reply.finish is None or reply.finish == "cut":
        raise StreamInterrupted(
            "the stream ended without a finish reason (cut connection)", partial_text="".join(reply.text)
        )
    return reply


class HookedProvider(ProviderBase):
    """A provider whose every stream passes through an agent's ``llm_stream`` hooks: what the
    agent hands its compactor, so a summary call is no way around a stream policy. Its model and
    window are the wrapped provider's (read through); so are its declared abilities, as they are
    when it is wrapped (the agent wraps for each compaction). It counts no requests itself."""

    def __init__(self, agent: Agent, provider: Provider, purpose: Literal["step", "compaction"]) -> None:
        self._agent = agent
        self._provider = provider
        self._purpose = purpose
        abilities = declared(provider)
        self.content_types = abilities.content_types
        self.structured_output = abilities.structured_output
        self.price_provider = abilities.price_provider
        self.prices = abilities.prices
        self._wire_style = abilities.wire_style()

    def __repr__(self) -> str:
        return f"HookedProvider({self._provider!r})"

    @property
    def model(self) -> str:
        return self._provider.model

    @model.setter
    def model(self, name: str) -> None:
        self._provider.model = name

    @property
    def context_window(self) -> int | None:
        return self._provider.context_window

    def wire_style(self) -> str | None:
        return self._wire_style

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        listeners = self._agent.hooks.llm_stream_hooks
        provider = self._provider

        async def base() -> Any:
            return provider.stream(request)

        # a refusal raises HookRefused here: the caller's call fails (a summary falls back)
        stream = await run_waterfall(
            listeners, StreamContext(self._agent, request, self._purpose), base, "llm_stream", stream_decision
        )
        try:
            async for chunk in stream:
                yield chunk
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

    async def aclose(self) -> None:
        await self._provider.aclose()


def _last_header(session: Session) -> str | None:
    events = session.events
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if ev["type"] == kinds.REQUEST_HEADER:
            return json.dumps(ev["data"], sort_keys=True, default=str)
    return None


__all__ = ["HookedProvider", "Params", "Requests", "read_stream"]
