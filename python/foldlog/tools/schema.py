"""JSON schemas from Python type hints, and a small validator/converter for tool arguments.

Supported: str, int, float, bool, None, list/tuple/set, dict[str, X], Optional/Union, Literal,
Enum, nested dataclasses and TypedDicts, ``Annotated[X, "description"]`` and defaults. The
validator covers exactly what the generator emits (no external dependency).
"""

from __future__ import annotations

import dataclasses
import enum
import inspect
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from foldlog.errors import FoldlogError

_MISSING = inspect.Parameter.empty
JSON = dict[str, Any]


class SchemaError(FoldlogError, TypeError):
    """A type hint that cannot be expressed as a tool argument schema."""


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def type_schema(tp: Any, where: str = "argument") -> JSON:
    """The JSON schema of one annotation."""
    origin = get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = get_args(tp)
        out = type_schema(base, where)
        desc = next((m for m in meta if isinstance(m, str)), None)
        if desc:
            out = {**out, "description": desc}
        return out
    if tp is Any:
        return {}
    if tp is type(None) or tp is None:
        return {"type": "null"}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if origin is Literal:
        values = list(get_args(tp))
        return {"enum": values, **_enum_type(values)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        return {"enum": values, **_enum_type(values)}
    if origin in (Union, types.UnionType):
        members = get_args(tp)
        non_null = [m for m in members if m is not type(None)]
        schemas = [type_schema(m, where) for m in non_null]
        if len(non_null) < len(members):
            schemas.append({"type": "null"})
        return {"anyOf": schemas}
    if origin in (list, Sequence, set, frozenset, tuple) or tp in (list, tuple, set):
        args = get_args(tp)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return {
                "type": "array",
                "prefixItems": [type_schema(a, where) for a in args],
                "minItems": len(args),
                "maxItems": len(args),
            }
        item = type_schema(args[0], where) if args else {}
        return {"type": "array", "items": item}
    if origin in (dict, Mapping) or tp is dict:
        args = get_args(tp)
        if args and args[0] is not str:
            raise SchemaError(f"{where}: dict keys must be str (JSON objects), got {args[0]!r}")
        return {"type": "object", "additionalProperties": type_schema(args[1], where) if args else {}}
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = get_type_hints(tp, include_extras=True)
        props: JSON = {}
        required: list[str] = []
        for f in dataclasses.fields(tp):
            s = type_schema(hints[f.name], f"{where}.{f.name}")
            if f.default is not dataclasses.MISSING:
                s = {**s, "default": _json_default(f.default, f"{where}.{f.name}")}
            elif f.default_factory is dataclasses.MISSING:
                required.append(f.name)
            props[f.name] = s
        return _object(
            props,
            required,
            tp.__doc__ if tp.__doc__ and not tp.__doc__.startswith(tp.__name__ + "(") else None,
        )
    if _is_typeddict(tp):
        hints = get_type_hints(tp, include_extras=True)
        props = {k: type_schema(v, f"{where}.{k}") for k, v in hints.items()}
        return _object(props, sorted(tp.__required_keys__), None)
    raise SchemaError(f"{where}: unsupported type {tp!r} for a tool argument")


def _enum_type(values: list[Any]) -> JSON:
    kinds = {type(v) for v in values}
    names = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if len(kinds) == 1 and next(iter(kinds)) in names:
        return {"type": names[next(iter(kinds))]}
    return {}


def _object(props: JSON, required: list[str], description: str | None) -> JSON:
    out: JSON = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    if description:
        out["description"] = inspect.cleandoc(description)
    return out


def _json_default(value: Any, where: str) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_json_default(v, where) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_default(v, where) for k, v in value.items()}
    raise SchemaError(f"{where}: default {value!r} is not JSON-representable")


_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Description (text before an ``Args:`` section) and per-argument descriptions (Google style)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    desc: list[str] = []
    params: dict[str, str] = {}
    current: str | None = None
    in_args = False
    for line in lines:
        if _ARGS_HEADER.match(line):
            in_args = True
            continue
        if in_args:
            if line and not line[0].isspace() and line.rstrip().endswith(":"):
                in_args = False  # another section (Returns:, Raises:, …)
                continue
            m = _ARG_LINE.match(line)
            if m and (not line.startswith("        ") or current is None):
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
            continue
        desc.append(line)
    return "\n".join(desc).strip(), params


def function_schema(
    fn: Callable[..., Any], skip: Callable[[Any], bool] = lambda _tp: False
) -> tuple[JSON, dict[str, Any], list[str]]:
    """(parameters schema, {param: annotation}, params injected instead of taken from the model)."""
    sig = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)
    _desc, docs = parse_docstring(fn.__doc__)
    props: JSON = {}
    required: list[str] = []
    annotations: dict[str, Any] = {}
    injected: list[str] = []
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise SchemaError(f"tool {fn.__name__}: *args/**kwargs cannot be described as a schema")
        if name not in hints:
            raise SchemaError(f"tool {fn.__name__}: parameter {name!r} needs a type hint")
        tp = hints[name]
        if skip(tp):
            injected.append(name)
            continue
        s = type_schema(tp, f"{fn.__name__}({name})")
        if name in docs and "description" not in s:
            s = {**s, "description": docs[name]}
        if p.default is not _MISSING:
            s = {**s, "default": _json_default(p.default, f"{fn.__name__}({name})")}
        else:
            required.append(name)
        props[name] = s
        annotations[name] = tp
    out: JSON = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out, annotations, injected


# --- validation ------------------------------------------------------------------------------

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def validate(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Every way ``value`` breaks ``schema``, as readable messages (empty when valid).

    The keywords the generator emits, plus what hand-written and MCP schemas commonly use:
    ``type`` lists, ``const``, ``allOf``/``oneOf``, local ``$ref`` (``#/$defs/…``,
    ``#/definitions/…``), ``minimum``/``maximum`` (and the exclusive ones), ``minLength``/
    ``maxLength``, ``minItems``/``maxItems`` and ``pattern``. Other keywords are not checked."""
    return _check(value, schema, path, schema)


def _check(value: Any, schema: Mapping[str, Any], path: str, root: Mapping[str, Any]) -> list[str]:
    if not isinstance(schema, Mapping):
        return []  # `true` / `false` schemas and junk: nothing checked
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        if target is not None:
            return _check(value, target, path, root)
    errors: list[str] = []
    if "anyOf" in schema or "oneOf" in schema:
        options = schema.get("anyOf") or schema.get("oneOf") or ()
        if not any(not _check(value, s, path, root) for s in options):
            errors.append(f"{path}: {_short(value)} matches none of the allowed types")
        return errors
    for sub in schema.get("allOf") or ():
        errors.extend(_check(value, sub, path, root))
    if "const" in schema and value != schema["const"]:
        errors.append(f"{path}: {_short(value)} is not {schema['const']!r}")
        return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {_short(value)} is not one of {schema['enum']}")
        return errors
    t = schema.get("type")
    kinds = [k for k in (t if isinstance(t, list) else [t]) if isinstance(k, str) and k in _TYPES]
    if kinds and not any(_TYPES[k](value) for k in kinds):
        errors.append(f"{path}: expected {' or '.join(kinds)}, got {_json_type(value)}")
        return errors
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", ()):
            if key not in value:
                errors.append(f"{path}: missing required property {key!r}")
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            if key in props:
                errors.extend(_check(v, props[key], f"{path}.{key}", root))
            elif extra is False:
                errors.append(f"{path}: unexpected property {key!r}")
            elif isinstance(extra, Mapping):
                errors.extend(_check(v, extra, f"{path}.{key}", root))
    elif isinstance(value, list):
        prefix = schema.get("prefixItems")
        if prefix is not None:
            if len(value) != len(prefix):
                errors.append(f"{path}: expected {len(prefix)} items, got {len(value)}")
            for i, (v, s) in enumerate(zip(value, prefix, strict=False)):
                errors.extend(_check(v, s, f"{path}[{i}]", root))
        elif "items" in schema:
            for i, v in enumerate(value):
                errors.extend(_check(v, schema["items"], f"{path}[{i}]", root))
        errors.extend(_bounds(len(value), schema, "minItems", "maxItems", "items", path))
    elif isinstance(value, str):
        errors.extend(_bounds(len(value), schema, "minLength", "maxLength", "characters", path))
        pattern = schema.get("pattern")
        if isinstance(pattern, str) and re.search(pattern, value) is None:
            errors.append(f"{path}: {_short(value)} does not match the pattern {pattern!r}")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        for key, ok, word in _NUMBER_BOUNDS:
            bound = schema.get(key)
            if isinstance(bound, int | float) and not isinstance(bound, bool) and not ok(value, bound):
                errors.append(f"{path}: {value!r} is not {word} {bound!r}")
    return errors


_NUMBER_BOUNDS: tuple[tuple[str, Callable[[Any, Any], bool], str], ...] = (
    ("minimum", operator.ge, "at least"),
    ("maximum", operator.le, "at most"),
    ("exclusiveMinimum", operator.gt, "more than"),
    ("exclusiveMaximum", operator.lt, "less than"),
)


def _bounds(n: int, schema: Mapping[str, Any], low: str, high: str, unit: str, path: str) -> list[str]:
    out = []
    lo, hi = schema.get(low), schema.get(high)
    if isinstance(lo, int) and n < lo:
        out.append(f"{path}: has {n} {unit}, fewer than {lo}")
    if isinstance(hi, int) and n > hi:
        out.append(f"{path}: has {n} {unit}, more than {hi}")
    return out


def _resolve(ref: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A local ``$ref`` (``#`` or ``#/a/b``) in ``root``; ``None`` when it cannot be followed."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in [p for p in ref[1:].split("/") if p]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, Mapping) else None


def _json_type(v: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](v):
            return name
    return type(v).__name__


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


# --- conversion (validated JSON -> Python values of the annotated types) ---------------------


def convert(value: Any, tp: Any) -> Any:
    origin = get_origin(tp)
    if origin is typing.Annotated:
        return convert(value, get_args(tp)[0])
    if value is None or tp is Any:
        return value
    if tp is float and isinstance(value, int):
        return float(value)
    if tp is int and isinstance(value, float):
        return int(value)
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return tp(value)
    if origin in (Union, types.UnionType):
        for member in get_args(tp):
            if member is type(None):
                continue
            if not validate(value, type_schema(member)):
                return convert(value, member)
        return value
    if origin in (list, Sequence) and isinstance(value, list):
        args = get_args(tp)
        return [convert(v, args[0]) for v in value] if args else value
    if origin in (set, frozenset) and isinstance(value, list):
        args = get_args(tp)
        return origin(convert(v, args[0]) for v in value) if args else origin(value)
    if origin is tuple and isinstance(value, list):
        args = get_args(tp)
        if args and args[-1] is Ellipsis:
            return tuple(convert(v, args[0]) for v in value)
        return tuple(convert(v, a) for v, a in zip(value, args, strict=False)) if args else tuple(value)
    if origin in (dict, Mapping) and isinstance(value, dict):
        args = get_args(tp)
        return {k: convert(v, args[1]) for k, v in value.items()} if args else value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type) and isinstance(value, dict):
        hints = get_type_hints(tp, include_extras=True)
        return tp(**{k: convert(v, hints[k]) for k, v in value.items()})
    if _is_typeddict(tp) and isinstance(value, dict):
        hints = get_type_hints(tp, include_extras=True)
        return {k: convert(v, hints[k]) if k in hints else v for k, v in value.items()}
    return value
