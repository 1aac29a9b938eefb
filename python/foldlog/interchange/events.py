"""The records a converter produces and the builder that keeps them well formed.

A converter reads a foreign transcript and drives an :class:`EventBuilder`: ``user``,
``assistant``, ``tool_result``, ``compaction``. The builder owns the bookkeeping every format
would otherwise repeat — turn/step boundaries in the order the agent loop writes them, unique
tool-call ids, pairing results with their ``tool/call``, the surface a fold must name — and
writes every event through the log's one writer, :class:`foldlog.log.grammar.writer.EventWriter`
(the agent's and the compactor's too), so the records it yields are the events the agent would
have written, whatever the source looked like.

Seqs inside the records (``source_event_seqs``, surface-op seqs) are *local*: the index of the
record in the conversation. :mod:`foldlog.interchange.writer` shifts them when the target
session already holds events.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from foldlog.errors import InvalidEventError
from foldlog.log.grammar import kinds
from foldlog.log.grammar.writer import EventWriter, SurfaceOp, assistant_message
from foldlog.log.text import display_text


class TranscriptError(InvalidEventError):
    """A source transcript that cannot be converted. Names the file and, where known, the line."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.line = line


@dataclass(slots=True)
class ImportedEvent:
    """One foldlog event built from a source transcript (seqs are local to the conversation)."""

    type: str
    data: dict[str, Any]
    surface_op: SurfaceOp | None = None
    source_event_seqs: list[int] | None = None
    # where it came from in the source file (1-based line, or item index for JSON arrays)
    source_line: int | None = None
    # the source's time for it (epoch ms), when the source has one
    time: int | None = None


@dataclass(slots=True)
class ImportCounts:
    """What a conversion produced, to be checked against the source."""

    messages: Counter[str] = field(default_factory=Counter)  # role -> count (recorded, not surface)
    tool_calls: int = 0
    tool_results: int = 0
    compactions: int = 0
    turns: int = 0
    steps: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "messages": dict(self.messages),
            "tool_calls": self.tool_calls,
            "tool_results": self.tool_results,
            "compactions": self.compactions,
            "turns": self.turns,
            "steps": self.steps,
        }


@dataclass(slots=True)
class Conversation:
    """One converted transcript: its events plus what we know about it. ``warnings`` says what
    of the source could not be carried as it was (a block type the log has no form for).

    A transcript that is a tree (Claude Code: sub-agents, checkpoint rewinds) converts to the
    thread the session ended on, with the rest as ``children``: each one a session of its own
    whose ``link`` is its header's parent link without the parent's ``id`` (the writer fills
    that in: the parent's id is only known once it is written) — ``{"kind": "subagent",
    "callId": …}`` or ``{"kind": "fork", "atSeq": …}``. ``name`` tells children apart
    (``agent-a93ccab``, ``fork-1``); ``left_out`` says, one line each, what of the source was
    not imported (abandoned branches under ``branches="current"``, records and blocks of kinds
    the importer does not know, with their counts)."""

    events: list[ImportedEvent]
    counts: ImportCounts
    id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    children: list[Conversation] = field(default_factory=list)
    link: dict[str, Any] | None = None
    name: str | None = None
    left_out: list[str] = field(default_factory=list)

    def tree(self) -> list[Conversation]:
        """This conversation and all its descendants, parents before children."""
        out = [self]
        for child in self.children:
            out.extend(child.tree())
        return out


@dataclass(slots=True)
class _PendingCall:
    call_id: str  # unique id written to the log
    name: str
    seq: int  # seq of its tool/call event


#: block types that are media: a content list holding one is kept as blocks (never flattened)
MEDIA_TYPES = frozenset(
    {"image", "document", "image_url", "input_image", "input_audio", "file", "input_file"}
)
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def media_blocks(content: Any, warn: Callable[[str], None]) -> list[dict[str, Any]] | None:
    """``content`` as the blocks the log keeps when it holds images, documents, audio or files;
    ``None`` when it holds none (the caller keeps it as before: text).

    Blocks are kept as the source wrote them where the log and the providers understand that
    form (Anthropic ``image`` / ``document``, OpenAI ``image_url`` / ``input_audio`` / ``file``);
    Responses-API forms become their chat equivalents (``input_image`` → ``image_url``,
    ``input_file`` → ``file``, ``input_text`` → ``text``). A block with no such form becomes a
    text block describing it, and ``warn`` is told.
    """
    if not isinstance(content, list) or not any(
        isinstance(b, Mapping) and b.get("type") in MEDIA_TYPES for b in content
    ):
        return None
    out: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, str):
            out.append({"type": "text", "text": block})
            continue
        if not isinstance(block, Mapping):
            warn(f"a {type(block).__name__} in a content list was kept as text")
            out.append({"type": "text", "text": _dumps(block)})
            continue
        kind = block.get("type")
        converted = _chat_block(block)
        if converted is None:
            warn(f"a {kind!r} block was kept as text (the log has no form for it)")
            converted = {"type": "text", "text": f"[{kind} block: {_dumps(dict(block))}]"}
        out.append(converted)
    return out


def _chat_block(block: Mapping[str, Any]) -> dict[str, Any] | None:
    kind = block.get("type")
    if kind in _TEXT_TYPES and isinstance(block.get("text"), str):
        return dict(block) if kind == "text" else {"type": "text", "text": block["text"]}
    if kind in ("image", "document", "input_audio", "file") and isinstance(
        block.get(_PAYLOAD[kind]), Mapping
    ):
        return dict(block)
    if kind == "image_url":
        url = block.get("image_url")
        if isinstance(url, str):
            return {"type": "image_url", "image_url": {"url": url}}
        return dict(block) if isinstance(url, Mapping) else None
    if kind == "input_image" and isinstance(block.get("image_url"), str):
        inner: dict[str, Any] = {"url": block["image_url"]}
        if isinstance(block.get("detail"), str):
            inner["detail"] = block["detail"]
        return {"type": "image_url", "image_url": inner}
    if kind == "input_file":
        file = {k: block[k] for k in ("file_data", "file_id", "filename") if isinstance(block.get(k), str)}
        return {"type": "file", "file": file} if "file_data" in file or "file_id" in file else None
    return None


_PAYLOAD = {"image": "source", "document": "source", "input_audio": "input_audio", "file": "file"}


class EventBuilder:
    """Builds a well-formed foldlog event sequence from conversation-level calls."""

    def __init__(self) -> None:
        self.events: list[ImportedEvent] = []
        self.counts = ImportCounts()
        self.line: int | None = None  # current source position, stamped on each record
        self.time: int | None = None  # the source's time there (epoch ms), stamped likewise
        self._turn = 0
        self._turn_open = False
        self._turn_has_reply = False
        self._step = 0
        self._step_open = False
        self._step_has_reply = False
        self._surface: list[int] = []
        self._surface_is_system: dict[int, bool] = {}
        self._pending: dict[str, _PendingCall] = {}  # source call id -> pending call
        self._used_ids: set[str] = set()
        self._synth = 0
        self._compaction = 0
        self._warnings: Counter[str] = Counter()
        self._left_out: Counter[str] = Counter()
        self._rec = EventWriter(self._emit)

    def warn(self, message: str) -> None:
        """Note something of the source that could not be carried as it was (reported once, counted)."""
        self._warnings[message] += 1

    def leave_out(self, what: str) -> None:
        """Note one record of the source that is not imported (``what`` names its kind and
        why); the conversation's ``left_out`` says it once, with its count."""
        self._left_out[what] += 1

    def content(self, content: Any) -> Any:
        """Message content as the log keeps it: blocks when it holds media, else its text (a
        block that text cannot hold is named in it, and warned about)."""
        blocks = media_blocks(content, self.warn)
        if blocks is not None:
            return blocks
        if isinstance(content, list):
            for block in content:
                if (
                    isinstance(block, Mapping)
                    and not isinstance(block.get("text"), str)
                    and block.get("type")
                ):
                    self.warn(f"a {block['type']!r} block was kept only as its name, [{block['type']}]")
        return display_text(content)

    # --- low level ------------------------------------------------------------------------

    def _emit(
        self,
        type_: str,
        data: dict[str, Any],
        surface_op: SurfaceOp | None = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        seq = len(self.events)
        self.events.append(
            ImportedEvent(
                type_,
                data,
                surface_op,
                list(sources) if sources is not None else None,
                self.line,
                self.time,
            )
        )
        if surface_op == "append":
            self._surface.append(seq)
            self._surface_is_system[seq] = type_ == kinds.SYSTEM_MESSAGE
        return seq

    def _open_turn(self) -> None:
        self._turn += 1
        self._turn_open = True
        self._turn_has_reply = False
        self._step = 0
        self.counts.turns += 1
        self._rec.turn_start(self._turn)

    def _open_step(self) -> None:
        if not self._turn_open:
            self._open_turn()
        self._step += 1
        self._step_open = True
        self._step_has_reply = False
        self.counts.steps += 1
        self._rec.step_start(self._turn, self._step)

    def _close_step(self) -> None:
        if self._step_open:
            self._step_open = False
            self._rec.step_end(self._turn, self._step)

    def end_turn(self, reason: str = "completed", **extra: Any) -> None:
        """Close the open step and turn (no-op when no turn is open)."""
        self._close_step()
        if self._turn_open:
            self._turn_open = False
            self._rec.turn_end(self._turn, reason, extra)

    def finish(self, reason: str = "completed") -> ImportCounts:
        self.end_turn(reason)
        return self.counts

    def unique_call_id(self, source_id: str | None) -> str:
        """A call id not used before in this conversation (sources reuse ids, or have none)."""
        base = source_id or ""
        if base and base not in self._used_ids:
            self._used_ids.add(base)
            return base
        while True:
            self._synth += 1
            candidate = f"{base}~{self._synth}" if base else f"call_{self._synth}"
            if candidate not in self._used_ids:
                self._used_ids.add(candidate)
                return candidate

    # --- conversation level ---------------------------------------------------------------

    def system(self, content: Any) -> int:
        self.counts.messages["system"] += 1
        return self._rec.system(content)

    def user(self, content: Any, *, source: str | None = None, new_turn: bool | None = None) -> int:
        """A user message. ``new_turn=None``: a new turn when the open one already has a reply.

        Injected context (``new_turn=False``) joins the open turn in a fresh step.
        """
        if new_turn is None:
            new_turn = self._turn_has_reply
        if new_turn:
            self.end_turn()
        if self._step_open and self._step_has_reply:
            self._close_step()
        if not self._step_open:
            self._open_step()
        data: dict[str, Any] = {"role": "user", "content": content}
        if source:
            data["source"] = source
        self.counts.messages["user"] += 1
        return self._rec.user(data)

    def restart(self, content: Any, *, source: str | None = None) -> int:
        """A prompt that starts the model's context over (a new root of a Claude Code session:
        plan mode's "Implement the following plan", a cleared conversation): a new turn whose
        user message resets the surface to the leading system messages and itself."""
        self.end_turn()
        self._open_step()
        data: dict[str, Any] = {"role": "user", "content": content}
        if source:
            data["source"] = source
        lead = 0
        while lead < len(self._surface) and self._surface_is_system[self._surface[lead]]:
            lead += 1
        kept = self._surface[:lead]
        self.counts.messages["user"] += 1
        seq = self._rec.user(data, surface_op={"op": "reset", "keep": list(kept)})
        self._surface = [*kept, seq]
        self._surface_is_system[seq] = False
        return seq

    def assistant(
        self,
        content: Any,
        *,
        reasoning: str | None = None,
        tool_calls: Sequence[tuple[str | None, str, str]] = (),
        usage: Mapping[str, Any] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> int:
        """One assistant reply: ``tool_calls`` are ``(source_id, name, raw_arguments)``."""
        if self._step_open and self._step_has_reply:
            self._close_step()
        if not self._step_open:
            self._open_step()
        self._step_has_reply = True
        self._turn_has_reply = True
        calls: list[tuple[str | None, str, str]] = [
            (src, name, args if isinstance(args, str) else _dumps(args)) for src, name, args in tool_calls
        ]
        ids = [self.unique_call_id(src) for src, _, _ in calls]
        message = assistant_message(
            content if content is not None else "",
            reasoning=reasoning or None,
            calls=[(cid, name, args) for cid, (_, name, args) in zip(ids, calls, strict=True)],
        )
        self.counts.messages["assistant"] += 1
        seq = self._rec.assistant(self._turn, self._step, message, usage=usage, extra=extra)
        for cid, (src, name, args) in zip(ids, calls, strict=True):
            call_seq = self._rec.tool_call(self._turn, self._step, cid, name, args)
            # a later call reusing a source id takes over the pairing for that id
            self._pending[src if src else cid] = _PendingCall(cid, name, call_seq)
            self.counts.tool_calls += 1
        return seq

    def set_usage(self, assistant_seq: int, usage: Mapping[str, Any]) -> None:
        """Attach usage reported after the reply was seen (Codex token_count)."""
        self.events[assistant_seq].data["usage"] = dict(usage)

    def has_pending(self, source_id: str) -> bool:
        return source_id in self._pending

    def pending_ids(self) -> list[str]:
        return list(self._pending)

    def tool_result(
        self,
        source_id: str | None,
        content: Any,
        *,
        name: str | None = None,
        is_error: bool = False,
        meta: Mapping[str, Any] | None = None,
    ) -> int:
        """The result of a call; paired by id, else with the oldest unanswered call."""
        pending: _PendingCall | None = None
        if source_id is not None and source_id in self._pending:
            pending = self._pending.pop(source_id)
        elif source_id is None and self._pending:
            pending = self._pending.pop(next(iter(self._pending)))
        if not self._step_open:
            self._open_step()
            self._step_has_reply = True  # a result belongs to the step of its call
        call_id = pending.call_id if pending else (source_id or self.unique_call_id(None))
        tool_name = name or (pending.name if pending else "")
        self.counts.tool_results += 1
        return self._rec.tool_result(
            self._turn,
            self._step,
            call_id,
            tool_name,
            content,
            is_error,
            meta=meta,
            call_seq=pending.seq if pending else None,
        )

    def compaction(
        self,
        summary: str,
        *,
        trigger: str = "auto",
        tokens_before: int | None = None,
        model: str | None = None,
        source: str | None = None,
    ) -> int:
        """Fold the whole surface (but the leading system messages) into a digest ``summary``."""
        self._close_step()
        self._compaction += 1
        self.counts.compactions += 1
        cid = f"import-{self._compaction}"
        self._rec.compaction_start(cid, trigger)
        lead = 0
        while lead < len(self._surface) and self._surface_is_system[self._surface[lead]]:
            lead += 1
        kept_prefix, folded = self._surface[:lead], self._surface[lead:]
        self._rec.compaction_summary(
            cid,
            summary,
            folded,
            [],
            mechanical=False,
            tokens_before=tokens_before,
            model=model or None,
            extra={"source": source} if source else None,
        )
        self.counts.messages["user"] += 1
        digest = self._rec.digest(summary, folded)
        self._surface = [*kept_prefix, digest]
        self._surface_is_system[digest] = False
        self._rec.compaction_end(cid)
        return digest

    def conversation(self, *, id: str | None = None, meta: Mapping[str, Any] | None = None) -> Conversation:
        self.finish()
        warnings = [msg if n == 1 else f"{msg} ({n} times)" for msg, n in self._warnings.items()]
        left_out = [f"{n} {what}" for what, n in self._left_out.items()]
        return Conversation(self.events, self.counts, id, dict(meta or {}), warnings, left_out=left_out)


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
