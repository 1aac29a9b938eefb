"""The retry schedule shared by every HTTP provider.

Connect/headers phase: network errors and HTTP 408, 429, 5xx are retried up to ``max_retries``
times with exponential backoff (0.5 s × 2^(n−1), capped at 15 s) plus jitter; a ``Retry-After``
(or ``retry-after-ms``) header replaces the backoff, capped the same way. A stream cut before
any output was forwarded is replayed up to ``max_replays`` times on the same schedule.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from foldlog.errors import ConfigError

RETRY_STATUSES = frozenset({408, 429})

OnRetry = Callable[[int, float, str], Awaitable[None] | None]
"""``on_retry(attempt, delay_seconds, reason)``; the agent turns it into a ``Retrying`` event."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 10
    base_delay: float = 0.5
    max_delay: float = 15.0
    jitter: float = 0.1  # up to this fraction of the delay is added at random
    max_replays: int = 3
    max_retry_after: float = 15.0  # a server's Retry-After is honoured up to this

    def __post_init__(self) -> None:
        if self.max_retries < 0 or self.max_replays < 0:
            raise ConfigError("max_retries and max_replays must be >= 0")
        if self.base_delay < 0 or self.max_delay < 0 or self.jitter < 0:
            raise ConfigError("retry delays and jitter must be >= 0")

    def backoff(self, attempt: int) -> float:
        """Delay before retry number ``attempt`` (1-based), jitter included."""
        base = min(self.base_delay * 2.0 ** (attempt - 1), self.max_delay)
        return base + random.uniform(0.0, base * self.jitter)

    def delay(self, attempt: int, headers: Mapping[str, str] | None = None) -> float:
        after = retry_after(headers) if headers is not None else None
        if after is not None:
            return min(after, self.max_retry_after)
        return self.backoff(attempt)


def is_retryable_status(status: int) -> bool:
    return status in RETRY_STATUSES or 500 <= status <= 599


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``."""
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(float(ms) / 1000.0, 0.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)
