"""Typed final answers: ``Agent.run(prompt, output_type=T)`` returns a validated ``T``.

``T`` is a pydantic model (validated by pydantic, which is then already imported: foldlog never
imports it), a dataclass or a ``TypedDict`` (the schema from `foldlog.tools.schema`, validated
and converted without pydantic), or a JSON-schema dict (validated by `foldlog.tools.schema`'s
validator; the answer is the JSON value).

How the model gives the answer:

- **native**, when the provider declares ``structured_output`` (OpenAI's ``response_format``
  json_schema; the local model's grammar): the request carries the schema and the reply without
  tool calls is the JSON answer;
- **final-answer tool** otherwise (any chat-completions endpoint): a ``final_answer`` tool whose
  arguments are the answer is offered beside the other tools; its call ends the turn. A plain
  text reply that is valid JSON for the schema is accepted too, as is one fenced JSON block in a
  reply of other text (`parse_json_text`).

A reply that does not validate goes back to the model naming the failing fields (as the tool's
error result, or a user message with ``source: "output-retry"``), up to
``Options.output_retries`` times within the step budget; every invalid answer counts, whether the
schema refused it, its arguments were not JSON, or one reply called ``final_answer`` more than
once (each such call gets an error result asking for one); then
:class:`~foldlog.errors.OutputValidationError`. The accepted answer is logged as an
``output/validated`` event (docs/log-format.md) before the turn ends.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from foldlog.errors import ConfigError, OutputValidationError
from foldlog.providers.base import declared
from foldlog.tools.host import ToolOutcome
from foldlog.tools.registry import Tool
from foldlog.tools.schema import SchemaError, _is_typeddict, convert, type_schema, validate

if TYPE_CHECKING:
    from foldlog.agent.recorder import StepRecorder
    from foldlog.log.grammar.types import ToolCall
    from foldlog.providers.base import Provider
    from foldlog.tools.registry import ToolRegistry

FINAL_TOOL = "final_answer"
FINAL_DESCRIPTION = (
    "Give your final answer. Call this exactly once, when you are done (after any other tools), "
    "with the answer as the arguments; it ends your turn."
)
RETRY_TOOL = (
    "error: the final answer is not valid: {errors}. Call final_answer again with corrected arguments."
)
RETRY_TEXT = (
    "[Your reply is not a valid final answer: {errors}. Reply again with only the JSON value "
    "matching the required schema{how}.]"
)
ACCEPTED = "final answer accepted"
MULTIPLE = (
    "error: final_answer was called {n} times in one reply; none was taken. Call final_answer "
    "exactly once, with your one answer."
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n?```\s*$", re.DOTALL)
#: a fenced block anywhere in a reply: its label (``json`` or none) and its body
_FENCED_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)


def _is_pydantic_model(tp: Any) -> bool:
    """A pydantic model class, recognised without importing pydantic."""
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_json_schema", None))
        and hasattr(tp, "model_validate")
    )


def _pydantic_errors(exc: Exception) -> list[str] | None:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    out = []
    for e in errors():
        loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.get("loc", ()))
        out.append(f"${loc}: {e.get('msg', 'invalid')}")
    return out


@dataclass(frozen=True, slots=True)
class OutputSpec:
    """What ``output_type`` asks for: a name, the JSON schema sent (an object: other schemas are
    wrapped as ``{"value": …}``) and the builder of the typed value."""

    name: str
    schema: dict[str, Any]
    wrapped: bool
    build: Callable[[Any], tuple[Any, list[str]]]

    @classmethod
    def of(cls, tp: Any) -> OutputSpec:
        if isinstance(tp, Mapping):
            schema = json.loads(json.dumps(tp))
            name = str(schema.get("title") or "output")

            def build_json(value: Any) -> tuple[Any, list[str]]:
                return value, validate(value, schema)

            return cls._make(name, schema, build_json)
        if _is_pydantic_model(tp):
            schema = tp.model_json_schema()

            def build_model(value: Any) -> tuple[Any, list[str]]:
                try:
                    return tp.model_validate(value), []
                except Exception as e:  # pydantic's ValidationError (not imported here)
                    errors = _pydantic_errors(e)
                    if errors is None:
                        raise
                    return None, errors

            return cls._make(tp.__name__, schema, build_model)
        if (dataclasses.is_dataclass(tp) and isinstance(tp, type)) or _is_typeddict(tp):
            try:
                schema = type_schema(tp, "output_type")
            except SchemaError as e:
                raise ConfigError(f"output_type {tp.__name__}: {e}") from None

            def build_typed(value: Any) -> tuple[Any, list[str]]:
                errors = validate(value, schema)
                return (None, errors) if errors else (convert(value, tp), [])

            return cls._make(tp.__name__, schema, build_typed)
        raise ConfigError(
            "output_type must be a pydantic model, a dataclass, a TypedDict or a JSON-schema dict, "
            f"got {tp!r}"
        )

    @classmethod
    def _make(
        cls, name: str, schema: dict[str, Any], build: Callable[[Any], tuple[Any, list[str]]]
    ) -> OutputSpec:
        name = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:64] or "output"
        if schema.get("type") == "object":
            return cls(name, schema, False, build)
        defs: dict[str, Any] = {k: schema.pop(k) for k in ("$defs", "definitions") if k in schema}
        wrapped = {"type": "object", "properties": {"value": schema}, "required": ["value"], **defs}
        return cls(name, wrapped, True, build)

    def check(self, value: Any) -> tuple[Any, list[str]]:
        """(the typed answer, []) or (None, what is wrong)."""
        if self.wrapped and isinstance(value, dict) and set(value) == {"value"}:
            value = value["value"]  # the wrapped form the schema asks for (a bare value is taken too)
        return self.build(value)

    def response_format(self) -> dict[str, Any]:
        """The OpenAI ``response_format`` asking for this schema."""
        return {
            "type": "json_schema",
            "json_schema": {"name": self.name, "schema": self.schema, "strict": False},
        }


class _FinalAnswerTool(Tool):
    """The final-answer tool: its function checks the arguments (so a bad answer counts as an
    output retry, with the output type's own error messages), not the runner."""

    __slots__ = ()

    def check(self, args: Any) -> list[str]:
        return []


def parse_json_text(text: str) -> tuple[Any, str | None]:
    """A reply's JSON value, or the reason it is none.

    The value is the whole reply, or the whole reply fenced (```` ```json ````), or else the one
    fenced block inside other text ("Here it is: ```json {…}``` Hope that helps."): the one
    labelled ``json``, or the one unlabelled block when none is. Several candidate blocks are
    refused (which one is the answer is not ours to guess)."""
    raw = text.strip()
    fenced = _FENCE.match(raw)
    if fenced:
        raw = fenced.group(1).strip()
    if not raw:
        return None, "the reply is empty"
    try:
        return json.loads(raw), None
    except ValueError as e:
        whole = e
    blocks = [(label.lower(), body.strip()) for label, body in _FENCED_BLOCK.findall(raw)]
    candidates = [body for label, body in blocks if label == "json"] or [
        body for label, body in blocks if not label
    ]
    if len(candidates) > 1:
        return None, f"the reply holds {len(candidates)} fenced JSON blocks; give exactly one"
    if not candidates:
        return None, f"the reply is not JSON ({whole})"
    try:
        return json.loads(candidates[0]), None
    except ValueError as e:
        return None, f"the fenced block in the reply is not JSON ({e})"


class OutputRun:
    """One run's typed-output state: the mode, the retries spent, the accepted answer."""

    def __init__(self, spec: OutputSpec, *, native: bool, retries: int) -> None:
        self.spec = spec
        self.native = native
        self.retries = retries
        self.failures = 0
        self.value: Any = None
        self.accepted = False
        self.answered = False  # a turn of this run ended with an accepted answer
        self.failure: OutputValidationError | None = None
        self.pending: str | None = None  # the retry message for the next step
        # the tool batch in progress: its final_answer calls, how many reached the tool, and
        # whether an invalid answer was counted for it (one retry per reply, however many calls)
        self._finals: list[str] = []
        self._invoked = 0
        self._counted = False
        self._added = False
        self.tool: Tool | None = None
        if not native:
            self.tool = _FinalAnswerTool(
                name=FINAL_TOOL,
                description=FINAL_DESCRIPTION,
                parameters=spec.schema,
                fn=self._final_answer,
                read_only=False,
            )

    @classmethod
    def start(cls, output_type: Any, provider: Provider, retries: int) -> OutputRun:
        native = declared(provider).structured_output
        return cls(OutputSpec.of(output_type), native=native, retries=retries)

    # --- the registry ---------------------------------------------------------------------

    def install(self, registry: ToolRegistry) -> None:
        if self.tool is None:
            return
        if FINAL_TOOL in registry:
            raise ConfigError(
                f"a tool named {FINAL_TOOL!r} is registered: it is the final-answer tool's name"
            )
        registry.register(self.tool)
        self._added = True

    def uninstall(self, registry: ToolRegistry) -> None:
        if self._added:
            registry.unregister(FINAL_TOOL)
            self._added = False

    def params(self) -> dict[str, Any]:
        return {"response_format": self.spec.response_format()} if self.native else {}

    # --- answers --------------------------------------------------------------------------

    def begin_batch(self, calls: Sequence[ToolCall]) -> None:
        """Before a reply's tool calls run: note its ``final_answer`` calls."""
        self._finals = [c.arguments for c in calls if c.name == FINAL_TOOL]
        self._invoked = 0
        self._counted = False

    def end_batch(self) -> None:
        """After the batch: a ``final_answer`` call that never reached the tool (arguments that
        are not a JSON object, too large, a policy refusal) is an invalid answer too."""
        if self._finals and not self.accepted and not self._counted:
            arguments = self._finals[0]
            self._reject(arguments, [_not_run_reason(arguments)])
        self._finals = []

    def _final_answer(self, **arguments: Any) -> ToolOutcome:
        self._invoked += 1
        if len(self._finals) > 1:  # one reply, several answers: none is taken
            message = MULTIPLE.format(n=len(self._finals))
            if not self._counted:
                self._reject(json.dumps(arguments, ensure_ascii=False, default=str), [f"$: {message[7:]}"])
            return ToolOutcome(message, is_error=True)
        value, errors = self.spec.check(arguments)
        if not errors:
            self._accept(value)
            return ToolOutcome(ACCEPTED)
        self._reject(json.dumps(arguments, ensure_ascii=False, default=str), errors)
        return ToolOutcome(RETRY_TOOL.format(errors="; ".join(errors)), is_error=True)

    def answer_text(self, text: str) -> bool:
        """A reply without calls: accepted (True), or a retry is queued (False); raises
        `OutputValidationError` when no retry is left."""
        value, why = parse_json_text(text)
        errors = [f"$: {why}"] if why is not None else []
        if not errors:
            value, errors = self.spec.check(value)
        if not errors:
            self._accept(value)
            return True
        self._reject(text, errors)
        if self.failure is not None:
            raise self.failure
        how = "" if self.native else ", or call the final_answer tool"
        self.pending = RETRY_TEXT.format(errors="; ".join(errors), how=how)
        return False

    def _accept(self, value: Any) -> None:
        self.value, self.accepted = value, True

    def _reject(self, reply: str, errors: list[str]) -> None:
        self.failures += 1
        self._counted = True
        if self.failures > self.retries:
            self.failure = OutputValidationError(
                f"the final answer did not validate as {self.spec.name} after {self.retries} "
                f"retr{'y' if self.retries == 1 else 'ies'}: {'; '.join(errors)}",
                reply=reply,
                errors=errors,
            )

    def result(self) -> Any:
        """The run's typed answer; `OutputValidationError` when its turn ended without one
        (the reply was cut at ``max_tokens``, a hook blocked the turn, …)."""
        if not self.answered:
            raise OutputValidationError(
                f"the turn ended without a final answer of type {self.spec.name}", reply="", errors=[]
            )
        return self.value

    def write_pending(self, rec: StepRecorder) -> None:
        """Log the queued retry message at the start of the next step."""
        if self.pending is not None:
            rec.user({"role": "user", "content": self.pending, "source": "output-retry"})
            self.pending = None

    def record(self, rec: StepRecorder, turn: int, step: int, value: Any) -> None:
        """The ``output/validated`` event of the accepted answer (its JSON form); the next turn
        of the run needs an answer of its own."""
        self.accepted, self.answered = False, True
        rec.events.output_validated(
            turn,
            step,
            name=self.spec.name,
            mode="native" if self.native else "tool",
            retries=self.failures,
            value=to_json(value),
        )

    def settled(self, rec: StepRecorder, turn: int, step: int) -> bool:
        """After a tool batch: whether the final-answer tool accepted an answer, recorded then
        (raises when its retries ran out)."""
        self.end_batch()
        if self.failure is not None:
            raise self.failure
        if not self.accepted:
            return False
        self.record(rec, turn, step, self.value)
        return True

    def answered_with(self, rec: StepRecorder, turn: int, step: int, content: str) -> bool:
        """Whether a reply without calls is the typed answer (recorded then)."""
        if not self.answer_text(content):
            return False
        self.record(rec, turn, step, self.value)
        return True


def _not_run_reason(arguments: str) -> str:
    """Why a ``final_answer`` call did not reach the tool, as an error line."""
    raw = arguments.strip()
    try:
        value = json.loads(raw) if raw else {}
    except ValueError as e:
        return f"$: the final_answer arguments are not JSON ({e})"
    if not isinstance(value, dict):
        return f"$: the final_answer arguments must be a JSON object, got {type(value).__name__}"
    return "$: the final_answer call was not run (its result says why)"


def to_json(value: Any) -> Any:
    """A typed answer as JSON (a pydantic model's ``model_dump``, a dataclass as a dict)."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return json.loads(json.dumps(dataclasses.asdict(value), default=str))
    return json.loads(json.dumps(value, default=str))


__all__ = ["FINAL_TOOL", "OutputRun", "OutputSpec", "parse_json_text", "to_json"]
