"""A safe calculator: arithmetic expressions evaluated over a whitelist of `ast` nodes, never `eval`.

    evaluate_expression("2^10 + sqrt(16) * 3")      # 1036.0   ('^' is a power, as on a calculator)
    await Calculator()(expression="10 // 3")        # ToolResult(content="3")

Allowed: int and float literals, + - * / // % ** (and ^ as power, with the precedence of **), unary + -, parentheses, the
constants pi, e, tau, and the functions listed in `FUNCTIONS` (sqrt, log, sin, factorial, ...),
called with positional arguments only. Everything else (names, attributes, subscripts, strings,
comprehensions, lambdas, keywords) is refused with `UnsupportedExpressionError` naming the piece.

Bounded work: the text length, the nesting depth and the size of integer results (`max_bits`;
exponents, products and factorials are checked *before* they are computed) are limited, so no
expression can eat the CPU or memory. Floats follow IEEE rules (math domain and overflow errors
are reported as such). Not covered: symbolic algebra, units, variables, complex numbers.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

from agentic_infer.tools.base import Tool

__all__ = ["FUNCTIONS", "Calculator", "UnsupportedExpressionError", "evaluate_expression"]

Number = int | float


class UnsupportedExpressionError(ValueError):
    """The expression uses something outside the calculator's whitelist."""


CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}

FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {  # name: (function, min args, max args)
    "abs": (abs, 1, 1), "round": (round, 1, 2), "min": (min, 1, 64), "max": (max, 1, 64),
    "sqrt": (math.sqrt, 1, 1), "exp": (math.exp, 1, 1), "log": (math.log, 1, 2), "ln": (math.log, 1, 1),
    "log2": (math.log2, 1, 1), "log10": (math.log10, 1, 1), "floor": (math.floor, 1, 1), "ceil": (math.ceil, 1, 1),
    "sin": (math.sin, 1, 1), "cos": (math.cos, 1, 1), "tan": (math.tan, 1, 1), "asin": (math.asin, 1, 1),
    "acos": (math.acos, 1, 1), "atan": (math.atan, 1, 1), "atan2": (math.atan2, 2, 2), "sinh": (math.sinh, 1, 1),
    "cosh": (math.cosh, 1, 1), "tanh": (math.tanh, 1, 1), "degrees": (math.degrees, 1, 1),
    "radians": (math.radians, 1, 1), "hypot": (math.hypot, 1, 64), "gcd": (math.gcd, 1, 64),
    "lcm": (math.lcm, 1, 64), "factorial": (math.factorial, 1, 1), "comb": (math.comb, 2, 2),
    "perm": (math.perm, 1, 2),
}

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_TRANSLATE = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-"})


def evaluate_expression(expression: str, *, max_bits: int = 10_000, max_length: int = 1_000, max_depth: int = 64,
                        caret_is_power: bool = True) -> Number:
    """Evaluate an arithmetic expression safely; raise ValueError/ArithmeticError on bad input."""
    if not isinstance(expression, str):
        raise UnsupportedExpressionError(f"expected the expression as text, got {type(expression).__name__}")
    text = expression.translate(_TRANSLATE).strip()
    if not text:
        raise UnsupportedExpressionError("the expression is empty")
    if len(text) > max_length:
        raise UnsupportedExpressionError(f"the expression has {len(text)} characters, more than {max_length}")
    try:
        tree = ast.parse(text.replace("^", "**") if caret_is_power else text, mode="eval")
    except SyntaxError as exc:
        raise SyntaxError(f"cannot parse {text!r}: {exc.msg}") from None
    return _Evaluator(max_bits=max_bits, max_depth=max_depth).visit(tree.body, 0)


class _Evaluator:
    def __init__(self, *, max_bits: int, max_depth: int) -> None:
        self.max_bits = max_bits
        self.max_depth = max_depth

    def visit(self, node: ast.AST, depth: int) -> Number:
        if depth > self.max_depth:
            raise UnsupportedExpressionError(f"the expression is nested more than {self.max_depth} levels deep")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
                raise UnsupportedExpressionError(f"only numbers are allowed, not {node.value!r}")
            return self._bounded(node.value)
        if isinstance(node, ast.Name):
            if node.id in CONSTANTS:
                return CONSTANTS[node.id]
            raise UnsupportedExpressionError(f"unknown name {node.id!r}; allowed constants: {', '.join(CONSTANTS)}")
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.visit(node.operand, depth + 1))
        if isinstance(node, ast.BinOp):
            op_type = type(node.op)
            if op_type not in _BINARY:
                raise UnsupportedExpressionError(f"the operator {type(node.op).__name__} is not allowed")
            left, right = self.visit(node.left, depth + 1), self.visit(node.right, depth + 1)
            self._precheck(op_type, left, right)
            return self._bounded(_BINARY[op_type](left, right))
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        raise UnsupportedExpressionError(f"{type(node).__name__} is not allowed in a calculator expression")

    def _call(self, node: ast.Call, depth: int) -> Number:
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            what = node.func.id if isinstance(node.func, ast.Name) else type(node.func).__name__
            raise UnsupportedExpressionError(f"unknown function {what!r}; allowed: {', '.join(sorted(FUNCTIONS))}")
        if node.keywords:
            raise UnsupportedExpressionError(f"{node.func.id}() takes positional arguments only")
        fn, low, high = FUNCTIONS[node.func.id]
        if not low <= len(node.args) <= high:
            raise UnsupportedExpressionError(f"{node.func.id}() takes {low}..{high} arguments, got {len(node.args)}")
        args = [self.visit(a, depth + 1) for a in node.args]
        if node.func.id in ("factorial", "comb", "perm"):
            self._check_combinatorics(node.func.id, args)
        return self._bounded(fn(*args))

    def _precheck(self, op: type, left: Number, right: Number) -> None:
        """Refuse integer results that would exceed `max_bits`, before computing them."""
        if op is ast.Pow and isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if right * math.log2(abs(left)) > self.max_bits:
                raise OverflowError(f"{left} ** {right} would have more than {self.max_bits} bits")
        if op is ast.Mult and isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > self.max_bits + 1:
                raise OverflowError(f"the product would have more than {self.max_bits} bits")

    def _check_combinatorics(self, name: str, args: list[Number]) -> None:
        """Estimate the size of factorial/comb/perm from log-gamma before computing it."""
        if not all(isinstance(a, int) for a in args):
            raise ValueError(f"{name}() needs integer arguments, got {args}")
        if any(a < 0 for a in args):
            raise ValueError(f"{name}() is not defined for negative values, got {args}")
        n = args[0]
        k = args[1] if len(args) > 1 else n
        if k > n:
            return  # comb/perm are 0
        lg = math.lgamma
        log_value = {"factorial": lg(n + 1), "comb": lg(n + 1) - lg(k + 1) - lg(n - k + 1),
                     "perm": lg(n + 1) - lg(n - k + 1)}[name]
        if log_value / math.log(2) > self.max_bits:
            raise OverflowError(f"{name}({', '.join(map(str, args))}) would have more than {self.max_bits} bits")

    def _bounded(self, value: Any) -> Number:
        if isinstance(value, bool):
            return int(value)
        if isinstance(value, int) and value.bit_length() > self.max_bits:
            raise OverflowError(f"the result has more than {self.max_bits} bits")
        if not isinstance(value, (int, float)):
            raise UnsupportedExpressionError(f"the result {value!r} is not a real number")
        if isinstance(value, float) and math.isinf(value):
            raise OverflowError("the result is too large for a float (infinite)")
        if isinstance(value, float) and math.isnan(value):
            raise ValueError("the result is not a number (nan)")
        return value


def format_number(value: Number) -> str:
    """Integers exactly; floats in their shortest round-trip form."""
    return str(value) if isinstance(value, int) else repr(value)


class Calculator(Tool):
    """The calculator as a Tool named "calculator" (one parameter, `expression`)."""

    name = "calculator"
    description = ("Evaluate an arithmetic expression exactly (integers) or in floating point: + - * / // % ** "
                   "(^ is power), parentheses, pi, e, and functions like sqrt, log, sin, factorial, comb.")
    parameters = {"type": "object",  # noqa: RUF012
                  "properties": {"expression": {"type": "string", "description": "e.g. '(3 + 4) * 2^10 / sqrt(2)'"}},
                  "required": ["expression"], "additionalProperties": False}

    def __init__(self, *, max_bits: int = 10_000, max_length: int = 1_000, caret_is_power: bool = True,
                 name: str | None = None) -> None:
        super().__init__(name=name)
        self.max_bits = max_bits
        self.max_length = max_length
        self.caret_is_power = caret_is_power

    async def invoke(self, *, expression: str) -> str:
        value = evaluate_expression(expression, max_bits=self.max_bits, max_length=self.max_length,
                                    caret_is_power=self.caret_is_power)
        return format_number(value)
