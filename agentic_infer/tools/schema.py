"""JSON schemas for tool parameters: derived from a function's type hints and docstring, and checked.

`function_schema(fn)` reads the signature, the type hints and the Google-style docstring (the first
paragraph is the description; the `Args:` section gives each parameter's description) and returns
`(description, parameters)` where `parameters` is an OpenAI-compatible JSON schema object.
`validate_arguments(parameters, arguments)` checks a call against such a schema (missing required
arguments, unknown arguments, wrong types, enum values) and raises `ToolArgumentError` naming the
argument; it converts losslessly where JSON is ambiguous (3.0 -> 3 for an integer, 3 -> 3.0 for a
number).

Supported annotations: str, int, float, bool, None, list/tuple/set/Sequence[X], dict/Mapping[str, X],
Literal[...], Enum subclasses, Optional[X] / X | None, Union (as anyOf), Any, and
`typing.Annotated[X, "description"]`. Not covered: `$ref`, dataclass or pydantic models as
parameters (use a dict), JSON-schema keywords beyond type/enum/items/properties/required.
"""

from __future__ import annotations

import collections.abc as cabc
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable
from typing import Any

from agentic_infer.errors import ToolError

__all__ = ["ToolArgumentError", "function_schema", "parse_docstring", "type_schema", "validate_arguments"]

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_ARRAYS = (list, tuple, set, frozenset, cabc.Sequence, cabc.MutableSequence, cabc.Set, cabc.Iterable)
_OBJECTS = (dict, cabc.Mapping, cabc.MutableMapping)
_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Return|Yields|Raises|Example|Examples|Note|Notes)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


class ToolArgumentError(ToolError, ValueError):
    """The arguments of a tool call do not match the tool's schema (the message names the argument)."""


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description, {parameter: description})."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    arg_indent: int | None = None
    for line in lines:
        header = _SECTION.match(line)
        if header:
            section, current, arg_indent = header.group(1).lower(), None, None
            continue
        if section is None:
            if not line.strip() and summary:
                section = "body"  # the description is the first paragraph
            elif line.strip():
                summary.append(line.strip())
            continue
        if section not in ("args", "arguments", "parameters") or not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        match = _ARG_LINE.match(line)
        if match and (arg_indent is None or indent <= arg_indent):
            arg_indent = indent
            current = match.group(1)
            params[current] = match.group(3).strip()
        elif current is not None:
            params[current] = f"{params[current]} {line.strip()}".strip()
    return " ".join(summary), params


def type_schema(tp: Any) -> dict[str, Any]:
    """The JSON schema of one Python annotation."""
    if tp is inspect.Parameter.empty or tp is Any or tp is object:
        return {}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        schema = type_schema(args[0])
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = notes[0]
        return schema
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        values = [m.value for m in tp]
        return {"type": _json_type_of(values[0]), "enum": values} if values else {}
    if origin is typing.Literal:
        values = list(args)
        kinds = {_json_type_of(v) for v in values}
        return {"type": kinds.pop(), "enum": values} if len(kinds) == 1 else {"enum": values}
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return type_schema(members[0])  # Optional[X]: nullability is expressed by not being required
        return {"anyOf": [type_schema(a) for a in members]}
    if tp in _ARRAYS or origin in _ARRAYS:
        homogeneous = len(args) == 1 or (len(args) == 2 and args[1] is Ellipsis)
        item = args[0] if homogeneous else None  # tuple[X, Y] (fixed shape) keeps no item schema
        schema: dict[str, Any] = {"type": "array"}
        if item is not None:
            schema["items"] = type_schema(item)
        return schema
    if tp in _OBJECTS or origin in _OBJECTS:
        schema = {"type": "object"}
        if len(args) == 2:
            schema["additionalProperties"] = type_schema(args[1])
        return schema
    raise ToolError(f"cannot derive a JSON schema for the annotation {tp!r}; "
                    "annotate with str, int, float, bool, list[...], dict[str, ...] or Literal[...]")


def _json_type_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else "object"


def function_schema(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """(description, parameters schema) of a function, from its type hints and docstring."""
    description, arg_docs = parse_docstring(inspect.getdoc(fn))
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ToolError(f"cannot resolve the type hints of {getattr(fn, '__name__', fn)!r}: {exc}; "
                        "import the annotated types at module level") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    allow_extra = False
    for name, param in inspect.signature(fn).parameters.items():
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            allow_extra = True
            continue
        if param.kind is inspect.Parameter.VAR_POSITIONAL or name in ("self", "cls"):
            continue
        schema = type_schema(hints.get(name, inspect.Parameter.empty))
        if name in arg_docs and "description" not in schema:
            schema["description"] = arg_docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        elif _is_json_value(param.default):
            schema["default"] = param.default
        properties[name] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    if not allow_extra:
        parameters["additionalProperties"] = False
    return description, parameters


def _is_json_value(value: Any) -> bool:
    if value is None or isinstance(value, (str, int, float, bool)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_is_json_value(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json_value(v) for k, v in value.items())
    return False


def validate_arguments(parameters: dict[str, Any], arguments: dict[str, Any], *, tool: str = "tool") -> dict[str, Any]:
    """Check `arguments` against an object schema; return them (losslessly converted) or raise."""
    if not isinstance(arguments, dict):
        raise ToolArgumentError(f"tool {tool!r}: arguments must be a JSON object, got {type(arguments).__name__}")
    properties = parameters.get("properties", {})
    missing = [name for name in parameters.get("required", []) if name not in arguments]
    if missing:
        raise ToolArgumentError(f"tool {tool!r}: missing required argument {missing[0]!r}"
                                + (f" (also missing: {', '.join(missing[1:])})" if missing[1:] else ""))
    if parameters.get("additionalProperties", True) is False:
        extra = sorted(set(arguments) - set(properties))
        if extra:
            raise ToolArgumentError(f"tool {tool!r}: unexpected argument {extra[0]!r}; "
                                    f"expected one of {sorted(properties)}")
    return {name: _check_value(properties.get(name, {}), value, f"{tool!r} argument {name!r}")
            for name, value in arguments.items()}


def _check_value(schema: dict[str, Any], value: Any, where: str) -> Any:
    if "anyOf" in schema:
        for option in schema["anyOf"]:
            try:
                return _check_value(option, value, where)
            except ToolArgumentError:
                continue
        raise ToolArgumentError(f"tool {where}: {value!r} matches none of the allowed types")
    kind = schema.get("type")
    if value is None and kind != "null":
        if "default" in schema or kind is None:
            return value
        raise ToolArgumentError(f"tool {where}: expected {kind}, got null")
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolArgumentError(f"tool {where}: expected an integer, got {type(value).__name__} {value!r}")
    elif kind == "number":
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolArgumentError(f"tool {where}: expected a number, got {type(value).__name__} {value!r}")
        value = float(value)
    elif kind == "string" and not isinstance(value, str):
        raise ToolArgumentError(f"tool {where}: expected a string, got {type(value).__name__} {value!r}")
    elif kind == "boolean" and not isinstance(value, bool):
        raise ToolArgumentError(f"tool {where}: expected true or false, got {type(value).__name__} {value!r}")
    elif kind == "array":
        if not isinstance(value, (list, tuple)):
            raise ToolArgumentError(f"tool {where}: expected an array, got {type(value).__name__} {value!r}")
        items = schema.get("items", {})
        value = [_check_value(items, v, f"{where}[{i}]") for i, v in enumerate(value)]
    elif kind == "object":
        if not isinstance(value, dict):
            raise ToolArgumentError(f"tool {where}: expected an object, got {type(value).__name__} {value!r}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            value = {k: _check_value(extra, v, f"{where}[{k!r}]") for k, v in value.items()}
    if "enum" in schema and value not in schema["enum"]:
        raise ToolArgumentError(f"tool {where}: {value!r} is not one of {schema['enum']}")
    return value
