"""The foldlog exception hierarchy.

Every error foldlog raises derives from :class:`FoldlogError`; each also subclasses the
built-in that describes it best, so ``except ValueError`` / ``except OSError`` keep working.
The Rust core raises the same classes (the bindings import them from here).
"""

from __future__ import annotations


class FoldlogError(Exception):
    """Root of every error foldlog raises."""


# --- the session log -----------------------------------------------------------------------


class InvalidEventError(FoldlogError, ValueError):
    """An event or message that cannot be recorded (bad shape, non-JSON-safe data, bad surface op)."""


class CorruptLogError(FoldlogError, ValueError):
    """A log file damaged before its end: valid events follow the damage. Names the file and line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


class NotALogError(CorruptLogError):
    """A file whose first line is neither a log header nor an event (a note, a binary, a lone torn
    line, a header behind a byte order mark): refused whole and left as it is, never cut."""


class UnsupportedFormatError(FoldlogError, ValueError):
    """A log written by a newer foldlog (unknown header version or required event type)."""


class StorageError(FoldlogError, OSError):
    """Writing or reading a session store failed (disk full, file changed under the writer, …)."""


class SessionNotFoundError(StorageError, FileNotFoundError):
    """No session log by that name or id (or the name matches several)."""


class OutputExistsError(StorageError, FileExistsError):
    """A file would be overwritten without ``--force``."""


class SessionLockedError(StorageError):
    """Another writer holds the session. ``holder`` names it (pid@host or a database client)."""

    def __init__(self, message: str, *, holder: str | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class MissingMediaError(StorageError, FileNotFoundError):
    """A media reference whose bytes are not in the session store's media store (removed by hand,
    or the log moved without its ``media`` folder). ``sha256`` names the bytes, ``session`` the
    session whose log references them (docs/retention.md, "Media stored once")."""

    def __init__(self, message: str, *, sha256: str, session: str | None = None) -> None:
        super().__init__(message)
        self.sha256 = sha256
        self.session = session


class ImmutableHistoryError(FoldlogError, TypeError):
    """A recorded message (a frozen dict or list the session handed out) was changed in place:
    copy it (``dict(m)``, ``foldlog.thaw(m)``) to change it."""


class MessageIndexError(FoldlogError, IndexError):
    """A message index outside the derived history."""


class UncountableValueError(FoldlogError, TypeError):
    """A value that is not text, a message or a list of messages was given to a token counter."""


class ForkError(FoldlogError, ValueError):
    """A fork that cannot be made: a fork point that is not an event of the parent (or not yet
    stored), a session without a place to fork into."""


class UnknownSeqError(FoldlogError, IndexError):
    """A seq the log does not hold: a stream asked to resume after an event that does not exist
    (`session.stream.events_since`, `session.stream.subscribe(after_seq=…)`)."""


class ParentLogError(StorageError):
    """A fork's reference to its parent's log cannot be followed: the parent's log is missing,
    holds another session, has fewer events than the fork point, or the chain of references
    loops or is too deep. ``parent`` names the parent's log file."""

    def __init__(self, message: str, *, parent: str | None = None) -> None:
        super().__init__(message)
        self.parent = parent


class TokenizerError(FoldlogError, ValueError):
    """A tokenizer cannot be loaded (its data file is missing or not in a supported form), or
    token ids were asked of the estimate, which has none."""


class ExportError(FoldlogError, ValueError):
    """A session that cannot be written in the format asked for (an unknown format, a session
    the format has no form for: ATIF needs at least one step)."""


class TraceExportError(FoldlogError, ConnectionError):
    """Spans could not be sent to an OTLP collector (unreachable, refusing, answering an error)
    within the export's time bound. Names the collector's URL and the last reason."""


# --- the agent loop ------------------------------------------------------------------------


class MaxStepsExceeded(FoldlogError):
    """The turn used its step budget (and the grace step) without a final answer."""


class BudgetExceeded(FoldlogError):
    """The session reached `Options.cost_limit` or `Options.token_budget`: the turn ended with
    reason ``budget`` before its next request. ``limit`` is ``"cost"`` or ``"tokens"``; ``used``
    and ``budget`` the spending and the limit."""

    def __init__(
        self,
        message: str,
        *,
        limit: str | None = None,
        used: float | None = None,
        budget: float | None = None,
    ) -> None:
        super().__init__(message)
        self.limit = limit
        self.used = used
        self.budget = budget


class RunCancelled(FoldlogError):
    """``Agent.cancel()`` (or task cancellation) stopped the running turn."""


class ApprovalRequired(FoldlogError):
    """The turn paused for a person's approval (docs/durable-runs.md): it ended with reason
    ``approval``. ``calls``: the calls waiting, each ``{"id", "name", "arguments"}`` (arguments as
    the model's JSON text); answer them with `Session.approve` / `Session.deny` (or ``foldlog
    approve``), then `Agent.resume()`."""

    def __init__(self, message: str, *, calls: list[dict[str, str]]) -> None:
        super().__init__(message)
        self.calls = [dict(c) for c in calls]


class NoUnfinishedTurnError(FoldlogError, ValueError):
    """``Agent.resume()``: the session has no turn to continue (its last turn ended, or it has
    none)."""


class ApprovalStateError(FoldlogError, ValueError):
    """``Session.approve`` / ``Session.deny``: the call is not waiting for an answer (unknown,
    already answered, or the session is not paused for approval)."""


class ErasureError(FoldlogError, ValueError):
    """``Session.erase`` / ``foldlog log erase``: the events cannot be erased as asked (an unknown
    seq, the header, an erasure record, an event already erased, an event a fork reads from its
    parent's log, an empty reason); the message names the event and the problem. Nothing changed."""


class AgentBusyError(FoldlogError, RuntimeError):
    """The agent cannot do this now: it is already running (use ``followup()`` / ``steer()``),
    or a tool that needs a running parent agent was called outside a run."""


class NothingToRunError(FoldlogError, ValueError):
    """``Agent.run()`` was called with no prompt and nothing queued."""


class InvariantError(FoldlogError, AssertionError):
    """A checked invariant failed (``Options.debug_invariants``): the request is not the log's
    derivation. A bug in foldlog: please report it with the session log."""


class OutputValidationError(FoldlogError, ValueError):
    """The model's final answer did not validate against ``output_type`` after
    ``Options.output_retries`` retries. ``reply``: the last reply (text, or the final-answer
    call's arguments); ``errors``: what was wrong with it (one line per failing field)."""

    def __init__(self, message: str, *, reply: str, errors: list[str]) -> None:
        super().__init__(message)
        self.reply = reply
        self.errors = list(errors)


class HookError(FoldlogError):
    """An agent hook raised; the turn ended with reason ``error``."""


class HookRefused(HookError):
    """A waterfall hook listener returned without calling ``next()`` and without a decision.

    That is a refusal: the guarded call does not happen (see ``docs/hooks.md`` for what each
    hook point makes of it). ``hook`` names the hook point, ``listener`` the listener."""

    def __init__(self, message: str, *, hook: str, listener: str) -> None:
        super().__init__(message)
        self.hook = hook
        self.listener = listener


class InvalidHookError(HookError, TypeError):
    """A hook listener its hook point cannot call (a waterfall listener must take ``(ctx, next)``)."""


# --- providers -----------------------------------------------------------------------------


class ProviderError(FoldlogError):
    """A model provider failed."""


class AuthError(ProviderError, PermissionError):
    """The provider refused the credentials (HTTP 401/403). Never retried."""


class APIError(ProviderError):
    """The provider answered with an error status or an error object."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class StreamInterrupted(ProviderError, ConnectionError):
    """The connection was cut after part of the reply had been forwarded."""

    def __init__(self, message: str, *, partial_text: str = "") -> None:
        super().__init__(message)
        self.partial_text = partial_text


class ProviderTimeout(ProviderError, TimeoutError):
    """The provider stalled past its watchdog or a summary call passed its timeout."""


class StreamProtocolError(ProviderError, ValueError):
    """The response broke a bound the client keeps on it: a line or body over ``max_line_bytes``,
    or more than ``max_noise_bytes`` of keep-alives and blank lines without an event. The message
    names the limit. Not retried or replayed: the same request would meet the same answer."""


class UnexpectedResponseError(StreamProtocolError):
    """A 200 answer that is neither the event stream nor the JSON asked for (a captive portal's
    HTML page, a proxy's notice): named by its content type and first bytes, never retried."""

    def __init__(self, message: str, *, content_type: str, head: str) -> None:
        super().__init__(message)
        self.content_type = content_type
        self.head = head


class UnsupportedContentError(ProviderError, ValueError):
    """A message holds a content block the provider or its model cannot take (an image sent to a
    text-only model). Raised before anything is sent; names the message and the block."""

    def __init__(
        self, message: str, *, index: int, role: str, block: int, block_type: str, provider: str
    ) -> None:
        super().__init__(message)
        self.index = index
        self.role = role
        self.block = block
        self.block_type = block_type
        self.provider = provider


class LocalModelError(ProviderError, ValueError):
    """The local model cannot take this input: a prompt longer than its context, a grammar
    llama.cpp cannot parse, a chat template that drops messages, an unknown special token."""


class CompactionError(FoldlogError):
    """A compaction could not be planned or recorded."""


# --- settings ------------------------------------------------------------------------------


class MCPError(FoldlogError, RuntimeError):
    """An MCP server could not be started or listed (names the server; a start failure carries
    the tail of its stderr as ``stderr``). A failing *call* is an error result, not this."""

    def __init__(self, message: str, *, server: str, stderr: str = "") -> None:
        super().__init__(message)
        self.server = server
        self.stderr = stderr


class ConfigError(FoldlogError, ValueError):
    """A setting that cannot be used: a bad value given to `Options`, a provider, a store or the
    CLI's ``foldlog.toml`` (the message names the setting, and the file when there is one)."""


class ConfigTypeError(ConfigError, TypeError):
    """A setting of the wrong kind: an async function where a plain callable is needed, a value
    that is neither a string nor a message."""


# --- warnings ------------------------------------------------------------------------------


class FoldlogWarning(FoldlogError, UserWarning):
    """Root of every warning foldlog gives (something worked, less well than it could); a
    `FoldlogError` too, so that ``-W error`` turns it into one."""


class CheckpointIgnoredWarning(FoldlogWarning):
    """A session's checkpoint does not match its log (edited, truncated, rewritten, from another
    version, corrupt): it was ignored and the whole log loaded (docs/retention.md, "Checkpoints")."""


__all__ = [
    "APIError",
    "AgentBusyError",
    "ApprovalRequired",
    "ApprovalStateError",
    "AuthError",
    "BudgetExceeded",
    "CheckpointIgnoredWarning",
    "CompactionError",
    "ConfigError",
    "ConfigTypeError",
    "CorruptLogError",
    "ErasureError",
    "ExportError",
    "FoldlogError",
    "FoldlogWarning",
    "ForkError",
    "HookError",
    "HookRefused",
    "ImmutableHistoryError",
    "InvalidEventError",
    "InvalidHookError",
    "InvariantError",
    "LocalModelError",
    "MCPError",
    "MaxStepsExceeded",
    "MessageIndexError",
    "MissingMediaError",
    "NoUnfinishedTurnError",
    "NotALogError",
    "NothingToRunError",
    "OutputExistsError",
    "OutputValidationError",
    "ParentLogError",
    "ProviderError",
    "ProviderTimeout",
    "RunCancelled",
    "SessionLockedError",
    "SessionNotFoundError",
    "StorageError",
    "StreamInterrupted",
    "StreamProtocolError",
    "TokenizerError",
    "TraceExportError",
    "UncountableValueError",
    "UnexpectedResponseError",
    "UnknownSeqError",
    "UnsupportedContentError",
    "UnsupportedFormatError",
]
