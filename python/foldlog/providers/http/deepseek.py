"""DeepSeek over its OpenAI-compatible API, with thinking mode and prompt-cache accounting."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from foldlog.errors import AuthError, ConfigError
from foldlog.providers.base import Request
from foldlog.providers.content import TEXT_ONLY
from foldlog.providers.http.openai_compat import OpenAICompatible

if TYPE_CHECKING:
    from foldlog.cost.prices import Price

DEEPSEEK_BASE_URL = "https://api.deepseek.com"
DEFAULT_MAX_TOKENS = 4096
CONTEXT_WINDOWS: Mapping[str, int] = {
    "deepseek-v4-flash": 1_048_576,
    "deepseek-v4-pro": 1_048_576,
    "deepseek-chat": 131_072,
    "deepseek-reasoner": 131_072,
}
# the older names pick thinking by model name and do not take the thinking parameters
_LEGACY = frozenset({"deepseek-chat", "deepseek-reasoner"})
_EFFORTS = frozenset({"high", "max"})


class DeepSeek(OpenAICompatible):
    """``DeepSeek()`` reads ``DEEPSEEK_API_KEY``. ``thinking`` and ``effort`` set the thinking mode.

    Assistant turns with tool calls are sent back with their ``reasoning_content`` while
    thinking is on (the API answers 400 otherwise); other assistant turns are sent without it.
    The models are text-only: a request holding an image fails before it is sent.
    """

    content_types = TEXT_ONLY
    #: the provider id `genai-prices` prices this API's requests under (foldlog.cost)
    price_provider = "deepseek"

    def __init__(
        self,
        api_key: str | None = None,
        model: str = "deepseek-v4-flash",
        thinking: bool = True,
        effort: str = "high",
        base_url: str = DEEPSEEK_BASE_URL,
        *,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        context_window: int | None = None,
        prices: Mapping[str, Price] | None = None,
        **kwargs: Any,
    ) -> None:
        key = api_key or os.environ.get("DEEPSEEK_API_KEY")
        if not key:
            raise AuthError("DeepSeek needs an API key: pass api_key= or set DEEPSEEK_API_KEY")
        if effort not in _EFFORTS:
            raise ConfigError(f"effort must be one of {sorted(_EFFORTS)}, got {effort!r}")
        from urllib.parse import urlsplit

        self._beta = "beta" in urlsplit(base_url).path.strip("/").split("/")
        super().__init__(
            base_url,
            key,
            model,
            max_tokens=max_tokens,
            context_window=context_window or CONTEXT_WINDOWS.get(model),
            **kwargs,
        )
        self.thinking = thinking
        self.effort = effort
        # own prices for models genai-prices lacks (or to override it); foldlog.cost prices the rest
        self.prices = dict(prices or {})

    @property
    def sends_reasoning(self) -> bool:
        return self.thinking or self.model == "deepseek-reasoner"

    def build_body(self, request: Request) -> dict[str, Any]:
        if self._beta and request.tools:
            raise ConfigError(f"do not use DeepSeek's /beta base URL with tools ({self.base_url})")
        body = super().build_body(request)
        if body.get("max_tokens") is None:
            body["max_tokens"] = DEFAULT_MAX_TOKENS
        model = body["model"]
        if model not in _LEGACY:
            body.setdefault("thinking", {"type": "enabled" if self.thinking else "disabled"})
            if self.thinking:
                body.setdefault("reasoning_effort", self.effort)
        return body

    def wire_style(self) -> str | None:
        # thinking mode needs each call's reasoning back: the core's "with-calls" style
        return "with-calls" if self.sends_reasoning else "strip"
