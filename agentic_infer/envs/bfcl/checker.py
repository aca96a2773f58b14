"""BFCL's AST check (after gorilla's bfcl_eval/eval_checker/ast_eval/ast_checker.py), with the reason a call fails.

    calls = parse_calls("[calculate_triangle_area(base=10, height=5)]")     # [("calculate_triangle_area", {...})]
    ast_check(calls, row_ground_truth, functions=row_functions, category="simple")   # AstResult(passed, detail)
    ast_match(calls, ground_truth)                                         # the bool alone

Rules per category (`bfcl_category(id)`): `simple` needs exactly one call, `multiple` one call checked against
the gold function's description, `parallel` (and `parallel_multiple`) one call per gold entry in any order
(each gold entry in turn takes the first unmatched call that passes, as BFCL's no-order checker does),
`irrelevance` passes iff there is no call. One call passes when it names the gold function (or its name
with "." as "_", as BFCL's FC handlers send it), has every parameter the schema requires, no parameter
outside both the schema and the gold, values of the schema's type (ints pass for floats; a value of the
gold's own type passes, BFCL's "variable" rule; array items are checked one level deep), each value among
the allowed ones (strings compared lowercased without spaces and `,./-_*^`; lists element-wise; dicts per
key, keys whose allowed values hold "" optional), and every gold parameter not marked optional ("").
Without `functions` the schema steps are skipped and ints and floats compare by value.
Not covered: Java / JavaScript type conversion, the multi-turn, live and executable categories.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentic_infer.errors import ConfigError

Call = tuple[str, dict[str, Any]]
CATEGORIES = ("simple", "multiple", "parallel", "irrelevance")
_PY_TYPES: dict[str, type] = {"string": str, "integer": int, "float": float, "number": float, "boolean": bool,
                              "array": list, "tuple": list, "dict": dict, "object": dict, "any": str}


def bfcl_category(row_id: str) -> str:
    """The AST category of a BFCL id (`simple_python_3` -> "simple", `parallel_multiple_0` -> "parallel")."""
    rid = str(row_id)
    if "multi_turn" in rid or "java" in rid or ("relevance" in rid and "irrelevance" not in rid):
        raise ConfigError(f"BFCL id {rid!r}: its category is not covered (Python simple / multiple / parallel / "
                          "irrelevance only); use those BFCL files")
    for name in ("irrelevance", "parallel", "multiple"):
        if name in rid:
            return name
    return "simple"


# ------------------------------------------------------------------------------ parsing calls

def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    raise ValueError("not a function name")


def parse_calls(text: str | None) -> list[Call] | None:
    """The calls in `text` (a Python list of keyword calls, or one call; code fences allowed), or None."""
    if not text:
        return None
    s = text.strip()
    fence = re.search(r"```(?:python|json)?\s*(.*?)```", s, flags=re.DOTALL)
    if fence:
        s = fence.group(1).strip()
    start = s.find("[")
    candidates = [s] + ([s[start:s.rfind("]") + 1]] if start >= 0 else [])
    for cand in candidates:
        try:
            node = ast.parse(cand, mode="eval").body
        except SyntaxError:
            continue
        items = node.elts if isinstance(node, (ast.List, ast.Tuple)) else [node]
        calls = []
        try:
            for it in items:
                if not isinstance(it, ast.Call) or it.args:
                    raise ValueError("not a keyword call")
                calls.append((_name(it.func), {k.arg: ast.literal_eval(k.value) for k in it.keywords}))
        except ValueError:
            continue
        return calls
    return None


# ------------------------------------------------------------------------------ values

def _standard(s: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", s).lower().replace("'", '"')


def _same(value: Any, allowed: Any) -> bool:
    """`value` equals one allowed value (strings standardised, lists element-wise, dicts per BFCL's dict rule)."""
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(allowed, str) or isinstance(value, str):
        return isinstance(allowed, str) and isinstance(value, str) and _standard(allowed) == _standard(value)
    if isinstance(allowed, bool) or isinstance(value, bool):
        return value is allowed
    if isinstance(allowed, (int, float)) and isinstance(value, (int, float)):
        return float(allowed) == float(value)
    if isinstance(allowed, list):
        return isinstance(value, list) and len(value) == len(allowed) and all(map(_same, value, allowed))
    if isinstance(allowed, dict):
        return isinstance(value, dict) and set(value) <= set(allowed) and all(
            value_matches(value[k], _options(allowed[k])) for k in value) and all(
            k in value for k, v in allowed.items() if "" not in _options(v))
    return bool(value == allowed)


def _options(v: Any) -> list[Any]:
    return list(v) if isinstance(v, list) else [v]


def value_matches(value: Any, allowed: Sequence[Any]) -> bool:
    """`value` is one of the `allowed` values ("" among them allows only the empty string itself)."""
    return any((a == "" and value == "") if a == "" else _same(value, a) for a in allowed)


def _gold_type(allowed: Sequence[Any]) -> type | None:
    return next((type(a) for a in allowed if a != ""), None)


def _type_error(param: str, value: Any, allowed: Sequence[Any], schema: Mapping[str, Any]) -> str | None:
    """Why `value` is not of the schema's type (None when it is), after BFCL's type_checker."""
    declared = str(schema.get("type", "string"))
    want = _PY_TYPES.get(declared)
    if want is None or type(value) is want or (want is float and type(value) is int):
        if want is list and isinstance(schema.get("items"), Mapping):
            return _item_type_error(param, value, allowed, schema["items"])
        return None
    if type(value) is _gold_type(allowed):  # BFCL's "variable" rule: the gold's own type is accepted
        return None
    return f"parameter {param!r} has type {type(value).__name__}, expected {declared} (value {value!r})"


def _item_type_error(param: str, value: list[Any], allowed: Sequence[Any], items: Mapping[str, Any]) -> str | None:
    want = _PY_TYPES.get(str(items.get("type", "")))
    if want is None:
        return None
    for option in allowed:
        if not isinstance(option, list):
            continue
        gold = _gold_type(option)
        if all(type(v) is want or type(v) is gold for v in value):
            return None
    return f"parameter {param!r}: items of {value!r} are not all {items.get('type')}"


# ------------------------------------------------------------------------------ calls

@dataclass(frozen=True)
class AstResult:
    """The AST verdict: passed, and why not (`detail`, with BFCL's `error_type` such as "wrong_count")."""

    passed: bool
    detail: str = ""
    error_type: str = ""


def _same_name(name: str, gold: str) -> bool:
    return name == gold or name == gold.replace(".", "_")


def check_call(call: Call, gold: Mapping[str, Mapping[str, Sequence[Any]]],
               function: Mapping[str, Any] | None = None) -> AstResult:
    """One call against one gold entry `{fn: {param: [allowed values]}}` (and the function's description)."""
    (fn, params), = gold.items()
    name, args = call
    if not _same_name(name, fn):
        return AstResult(False, f"called {name!r}, expected {fn!r}", "wrong_func_name")
    schema = dict((function or {}).get("parameters") or {})
    props = schema.get("properties") or {}
    for p in schema.get("required") or ():
        if p not in args:
            return AstResult(False, f"{fn}: missing required parameter {p!r}", "missing_required")
    for p, value in args.items():
        if p not in params or (function is not None and p not in props):
            return AstResult(False, f"{fn}: unexpected parameter {p!r}", "unexpected_param")
        allowed = list(params[p])
        if function is not None and (why := _type_error(p, value, allowed, props[p])):
            return AstResult(False, f"{fn}: {why}", "type_error")
        if not value_matches(value, allowed):
            return AstResult(False, f"{fn}: parameter {p!r} = {value!r} is not one of the allowed {allowed!r}",
                             "value_error")
    for p, allowed in params.items():
        if p not in args and "" not in allowed:
            return AstResult(False, f"{fn}: parameter {p!r} is missing and not optional", "missing_optional")
    return AstResult(True)


def _describe(functions: Sequence[Mapping[str, Any]] | None, name: str) -> Mapping[str, Any] | None:
    return next((f for f in functions or () if f.get("name") == name), None)


def ast_check(calls: Sequence[Call] | None, ground_truth: Sequence[Mapping[str, Any]], *,
              functions: Sequence[Mapping[str, Any]] | None = None, category: str | None = None) -> AstResult:
    """BFCL's AST check of `calls` (None: the output did not parse) against `ground_truth` (see the docstring).
    `category` defaults to "simple" for one gold call, "parallel" for several."""
    cat = category or ("parallel" if len(ground_truth) > 1 else "simple")
    if cat not in CATEGORIES:
        raise ConfigError(f"BFCL category {cat!r}: choose one of {', '.join(CATEGORIES)}")
    if cat == "irrelevance":
        if calls:
            return AstResult(False, f"no call was expected (none of the functions fits), got {len(calls)}: "
                             f"{', '.join(n for n, _ in calls)}", "irrelevance")
        return AstResult(True)
    if calls is None:
        return AstResult(False, "the output is not a list of function calls", "parse_error")
    if len(calls) != len(ground_truth):
        return AstResult(False, f"wrong number of calls: {len(calls)}, expected {len(ground_truth)}", "wrong_count")
    matched: set[int] = set()
    for i, gold in enumerate(ground_truth):
        function = _describe(functions, next(iter(gold)))
        errors = []
        for j, call in enumerate(calls):
            if j in matched:
                continue
            result = check_call(call, gold, function if functions is not None else None)
            if result.passed:
                matched.add(j)
                break
            errors.append((j, result))
        else:
            if len(ground_truth) == 1:
                return errors[0][1]
            why = "; ".join(f"call {j + 1}: {r.detail}" for j, r in errors)
            return AstResult(False, f"no call matches gold call {i + 1} ({next(iter(gold))}): {why}",
                             errors[0][1].error_type if len(errors) == 1 else "cannot_find_match")
    return AstResult(True)


def ast_match(calls: Sequence[Call] | None, ground_truth: Sequence[Mapping[str, Any]], *,
              functions: Sequence[Mapping[str, Any]] | None = None, category: str | None = None) -> bool:
    """`ast_check(...).passed`."""
    return ast_check(calls, ground_truth, functions=functions, category=category).passed


def _first(allowed: Any) -> Any:
    """The first allowed value, with dicts (and lists of dicts) of allowed values resolved recursively."""
    if isinstance(allowed, dict):
        return {k: _first(_options(v)[0]) for k, v in allowed.items() if _options(v)[0] != ""}
    if isinstance(allowed, list):
        return [_first(v) if isinstance(v, dict) else v for v in allowed]
    return allowed


def gold_calls(ground_truth: Sequence[Mapping[str, Mapping[str, Sequence[Any]]]], *,
               functions: Sequence[Mapping[str, Any]] | None = None) -> list[Call]:
    """One concrete call per gold entry: the first allowed value of each parameter; an optional one (first
    allowed value "") is left out unless the function's schema requires it, then its first other value is used
    (BFCL's data marks a few required parameters optional). ToolRL's reward compares against these calls."""
    out = []
    for gold in ground_truth:
        (fn, params), = gold.items()
        required = set(((_describe(functions, fn) or {}).get("parameters") or {}).get("required") or ())
        args = {}
        for p, allowed in params.items():
            values = [v for v in allowed if v != ""] if p in required else list(allowed)
            if values and values[0] != "":
                args[p] = _first(values[0])
        out.append((fn, args))
    return out


__all__ = ["CATEGORIES", "AstResult", "Call", "ast_check", "ast_match", "bfcl_category", "check_call", "gold_calls",
           "parse_calls", "value_matches"]
