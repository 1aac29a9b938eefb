"""Secrets out of a page someone may share: the viewer's redaction (on unless ``--no-redact``).

What counts as a secret (docs/viewer.md, "Redaction"): API keys and tokens by their known prefixes
(OpenAI and Anthropic ``sk-``, GitHub ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and
``github_pat_``, Slack ``xoxb-``/``xoxp-``, AWS access key ids ``AKIA…``/``ASIA…``, Google
``AIza…``), the token after ``Bearer``, and long high-entropy strings (32 characters or more of
letters, digits and ``_-+=``, mixing upper case, lower case and digits, at least 4 bits of entropy
per character, and less than 60% of it in runs of three lower-case letters or more: what a
generated secret looks like, and what a word, an identifier, a path, a hex digest or a UUID
does not). Each is replaced by ``[REDACTED <kind>]``.

Media are not text: the base64 data of an image, audio or file block (and a ``data:`` URL) is
left as it is, so the page still shows the image.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

#: the marker a secret is replaced with (the page highlights it)
MARKER = "[REDACTED {}]"

# each starts where a word starts (``disk-usage-…`` holds no key); an ``sk-`` key holds a digit
_KNOWN: tuple[tuple[str, str], ...] = (
    ("anthropic-key", r"(?<![A-Za-z0-9_])sk-ant-[A-Za-z0-9_\-]{16,}"),
    ("api-key", r"(?<![A-Za-z0-9_\-])sk-(?=[A-Za-z_\-]*[0-9])[A-Za-z0-9_\-]{16,}"),
    ("github-token", r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{20,}"),
    ("github-token", r"(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9_]{20,}"),
    ("slack-token", r"(?<![A-Za-z0-9_])xox[bpoas]-[A-Za-z0-9\-]{10,}"),
    ("aws-key", r"(?<![A-Z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Z0-9])"),
    ("google-key", r"(?<![A-Za-z0-9_])AIza[0-9A-Za-z_\-]{35}"),
)
_BEARER = re.compile(r"(?i)(\bBearer\s+)([A-Za-z0-9._~+/\-]{8,}=*)")
_PATTERN = re.compile("|".join(f"(?P<k{i}>{p})" for i, (_, p) in enumerate(_KNOWN)))
_LONG = re.compile(r"[A-Za-z0-9_+=\-]{32,}")
#: bits per character above which a long mixed string is taken for a generated secret
ENTROPY_BITS = 3.8
#: the share of a long string in lower-case runs (``[a-z]{3,}``) from which it reads as words
#: (``HandleIncomingWebhookRequestsV2``: 0.8; a random token: under 0.5 in 99 cases of 100)
WORDY = 0.6
_WORDS = re.compile(r"[a-z]{3,}")
#: the keys whose string values are media data, never text
_MEDIA_KEYS = frozenset({"file_data"})


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character."""
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _high_entropy(token: str) -> bool:
    return (
        any(c.isupper() for c in token)
        and any(c.islower() for c in token)
        and any(c.isdigit() for c in token)
        and entropy(token) >= ENTROPY_BITS
        and sum(len(w) for w in _WORDS.findall(token)) < WORDY * len(token)
    )


class Redactor:
    """Replaces the secrets in strings and in JSON-shaped data; ``found`` counts them by kind."""

    def __init__(self) -> None:
        self.found: Counter[str] = Counter()

    def text(self, value: str) -> str:
        """``value`` with every secret replaced by its marker."""
        if len(value) < 8:
            return value
        out = _PATTERN.sub(self._known, value)
        out = _BEARER.sub(self._bearer, out)
        return _LONG.sub(self._long, out)

    def _known(self, match: re.Match[str]) -> str:
        kind = _KNOWN[int(str(match.lastgroup)[1:])][0]
        self.found[kind] += 1
        return MARKER.format(kind)

    def _bearer(self, match: re.Match[str]) -> str:
        if match.group(2).startswith("[REDACTED"):
            return match.group(0)
        self.found["bearer-token"] += 1
        return match.group(1) + MARKER.format("bearer-token")

    def _long(self, match: re.Match[str]) -> str:
        token = match.group(0)
        if not _high_entropy(token):
            return token
        self.found["high-entropy"] += 1
        return MARKER.format("high-entropy")

    def data(self, value: Any) -> Any:
        """JSON-shaped ``value`` (dicts, lists, strings, numbers) with its strings redacted, media
        data left alone (see the module's notes). A new value: ``value`` is not changed."""
        return _walk(value, self.text)

    @property
    def total(self) -> int:
        return sum(self.found.values())


def _is_media(key: str, value: str, parent: dict[str, Any]) -> bool:
    if value.startswith("data:") and ";base64," in value[:100]:
        return True
    if key in _MEDIA_KEYS:
        return True
    # {"type": "base64", "media_type": …, "data": …} (an image or document source) and
    # {"input_audio": {"data": …, "format": …}}
    return key == "data" and (parent.get("type") == "base64" or "format" in parent)


def _walk(value: Any, text: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return text(value)
    if isinstance(value, list):
        return [_walk(v, text) for v in value]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, v in value.items():
            if isinstance(v, str) and _is_media(key, v, value):
                out[key] = v
            else:
                out[key] = _walk(v, text)
        return out
    return value


__all__ = ["ENTROPY_BITS", "MARKER", "Redactor", "entropy"]
