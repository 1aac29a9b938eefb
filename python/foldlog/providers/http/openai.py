"""OpenAI's chat-completions API (reads ``OPENAI_API_KEY``)."""

from __future__ import annotations

import os
from typing import Any

from foldlog.errors import AuthError
from foldlog.providers.content import CHAT_COMPLETIONS
from foldlog.providers.http.openai_compat import OpenAICompatible

OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAI(OpenAICompatible):
    """OpenAI chat completions: text, images (``image_url``), audio (``input_audio``) and files
    (``file``, PDFs) may be sent, as the model allows (``content_types=`` narrows it)."""

    content_types = CHAT_COMPLETIONS
    #: the provider id `genai-prices` prices this API's requests under (foldlog.cost)
    price_provider = "openai"
    structured_output = True  # `response_format` json_schema (Structured Outputs)

    def __init__(
        self,
        api_key: str | None = None,
        model: str = "gpt-4o-mini",
        base_url: str = OPENAI_BASE_URL,
        **kwargs: Any,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise AuthError("OpenAI needs an API key: pass api_key= or set OPENAI_API_KEY")
        super().__init__(base_url, key, model, **kwargs)
