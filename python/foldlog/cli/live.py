"""The sink the CLI gives the agent: streams answer text, shows tool activity compactly, totals usage.

Answer text goes to stdout; everything else (tool calls, results, notices, the usage line) goes to
stderr so that ``foldlog run "…" > answer.txt`` keeps only the answer. With ``json_mode`` each
event is one JSON object per line on stdout instead.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from foldlog.cli.render import call_line

RESULT_PREVIEW = 160


@dataclasses.dataclass(slots=True)
class Totals:
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    cost: float = 0.0
    cost_known: bool = False
    last_prompt_tokens: int = 0

    @property
    def hit_rate(self) -> float:
        return self.cache_hit_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cache_hit_tokens": self.cache_hit_tokens,
            "cache_miss_tokens": self.cache_miss_tokens,
            "cache_hit_rate": round(self.hit_rate, 4),
            "cost": round(self.cost, 6) if self.cost_known else None,
        }


class LiveSink:
    """``requests_sent``: reads the provider's count of requests sent (``OpenAICompatible.
    requests_sent``), the only count that also sees requests no usage was reported for — a retried
    HTTP error, a cut stream, a server that sends no usage, the local model's second call for a
    text answer. Without it (or while it returns ``None``) requests are counted from the usage
    reports of every source: the agent's steps, sub-agents and compaction summaries."""

    def __init__(
        self,
        *,
        json_mode: bool = False,
        show_reasoning: bool = False,
        out: TextIO | None = None,
        err: TextIO | None = None,
        requests_sent: Callable[[], int | None] | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.show_reasoning = show_reasoning
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.requests_sent = requests_sent
        self._sent_at_start = requests_sent() if requests_sent is not None else None
        self._usage_reports = 0
        self.totals = Totals()
        self.turn_reason: str | None = None
        self.turn_error: str | None = None
        self._mid_line = False  # answer text printed without a closing newline
        self._in_reasoning = False

    # --- plumbing ----------------------------------------------------------------------------

    def _end_text(self) -> None:
        if self._mid_line:
            self.out.write("\n")
            self.out.flush()
            self._mid_line = False
        if self._in_reasoning:
            self.err.write("\n")
            self._in_reasoning = False

    def note(self, text: str) -> None:
        self._end_text()
        self.err.write(text + "\n")
        self.err.flush()

    def __call__(self, event: Any) -> None:
        kind = type(event).__name__
        self._account(kind, event)
        if self.json_mode:
            record: dict[str, Any] = {"event": kind}
            if dataclasses.is_dataclass(event) and not isinstance(event, type):
                record.update(dataclasses.asdict(event))
            self.out.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
            self.out.flush()
            return
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(event)

    def _account(self, kind: str, event: Any) -> None:
        if kind == "Usage":
            t = self.totals
            self._usage_reports += 1
            t.requests = self.request_count()
            if event.source == "executor":
                t.last_prompt_tokens = event.prompt_tokens
            t.prompt_tokens += event.prompt_tokens
            t.completion_tokens += event.completion_tokens
            t.cache_hit_tokens += event.cache_hit_tokens
            t.cache_miss_tokens += event.cache_miss_tokens
            if event.cost is not None:
                t.cost += event.cost
                t.cost_known = True
        elif kind == "TurnDone":
            self.turn_reason = event.reason
            self.turn_error = event.error

    # --- human rendering ---------------------------------------------------------------------

    def _on_Text(self, event: Any) -> None:
        if self._in_reasoning:
            self.err.write("\n")
            self._in_reasoning = False
        self.out.write(event.text)
        self.out.flush()
        self._mid_line = not event.text.endswith("\n")

    def _on_Reasoning(self, event: Any) -> None:
        if not self.show_reasoning:
            return
        if not self._in_reasoning:
            self._end_text()
            self.err.write("  thinking: ")
            self._in_reasoning = True
        self.err.write(event.text)
        self.err.flush()

    def _on_ToolDispatch(self, event: Any) -> None:
        if event.partial:
            return
        self.note(f"  → {call_line(event.name, event.arguments)}")

    def _on_ToolResult(self, event: Any) -> None:
        first = " ".join(str(event.content).split())
        if len(first) > RESULT_PREVIEW:
            first = first[: RESULT_PREVIEW - 1] + "…"
        mark = "✗" if event.is_error else "←"
        self.note(f"  {mark} {event.name}: {first} ({len(event.content)} chars)")

    def _on_Notice(self, event: Any) -> None:
        self.note(f"  [{event.level}] {event.message}")

    def _on_Retrying(self, event: Any) -> None:
        self.note(f"  [retry {event.attempt}] {event.reason}")

    def _on_CompactionStarted(self, event: Any) -> None:
        focus = f" (focus: {event.focus})" if event.focus else ""
        self.note(f"  [compaction] {event.trigger}{focus}…")

    def _on_CompactionDone(self, event: Any) -> None:
        how = "mechanical fold" if event.mechanical else "summary"
        self.note(f"  [compaction] folded {event.folded} message(s) into a {how}")

    def _on_TurnDone(self, event: Any) -> None:
        self._end_text()
        if event.reason != "completed":  # the error itself is reported once, by the command
            self.note(f"  [turn ended: {event.reason}]")

    # --- summaries ---------------------------------------------------------------------------

    def request_count(self) -> int:
        """Requests made so far (see the class docstring for where the count comes from)."""
        sent = self.requests_sent() if self.requests_sent is not None else None
        if sent is None:
            return self._usage_reports
        return sent - (self._sent_at_start or 0)

    def final_totals(self) -> Totals:
        """The totals with the request count brought up to date (a last request may have
        reported no usage)."""
        self.totals.requests = self.request_count()
        return self.totals

    def usage_line(self, currency: str | None = None) -> str:
        t = self.final_totals()
        cost = f", cost {t.cost:.6f}{' ' + currency if currency else ''}" if t.cost_known else ""
        return (
            f"usage: {t.requests} request(s), {t.prompt_tokens} prompt + {t.completion_tokens} completion "
            f"tokens, cache hit {t.hit_rate:.0%}{cost}"
        )

    def finish(self) -> None:
        self._end_text()
