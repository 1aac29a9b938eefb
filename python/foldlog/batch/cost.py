"""What a session's usage cost: the one place batch jobs price tokens.

Today it uses `foldlog.providers.pricing` (DeepSeek's table); a richer price source plugs in
here, and every job (``stats``, ``compact-eval``'s summaries) follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def usage_cost(usage: Mapping[str, Any], model: str | None) -> tuple[float | None, str | None]:
    """``(cost, currency)`` of summed usage (the log's camelCase keys: ``cacheHitTokens``,
    ``cacheMissTokens``, ``completionTokens``) at ``model``'s price; ``(None, None)`` when the
    model has no known price."""
    from foldlog.providers.base import Usage
    from foldlog.providers.pricing import DEEPSEEK_PRICES

    price = DEEPSEEK_PRICES.get(model or "")
    if price is None:
        return None, None
    hit = int(usage.get("cacheHitTokens", 0) or 0)
    miss = int(usage.get("cacheMissTokens", 0) or 0)
    prompt = int(usage.get("promptTokens", 0) or 0)
    if not hit and not miss:
        miss = prompt  # no cache split reported: every prompt token at the input price
    u = Usage(
        prompt_tokens=prompt,
        completion_tokens=int(usage.get("completionTokens", 0) or 0),
        cache_hit_tokens=hit,
        cache_miss_tokens=miss,
    )
    return price.cost(u), price.currency


__all__ = ["usage_cost"]
