r"""Game of 24: the one checker of an answer expression, and its extraction from a model's output.

    check_24("(1+1)*(8+4)", "1 1 8 4")                      # True
    check_24("(1+1+4)*4", "1 1 4 6")                        # False: 4 twice, 6 unused
    extract_24_expression(r"so \boxed{(1 + 2 + 3) \times 4 = 24}")   # "(1 + 2 + 3) * 4"

An expression is correct when it uses exactly the puzzle's numbers, each once, with + - * / and
parentheses, and equals the target in exact fractions (no floats). Text after an "=" is ignored.
Not covered: the Game-of-24 environment and solver (`agentic_infer.engines.tree.game24`), unary minus
or concatenation of numbers.
"""

from __future__ import annotations

import ast
import re
from fractions import Fraction
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.verify.extract import extract_boxed


def parse_numbers(puzzle: str | list[Any]) -> list[Fraction]:
    """A puzzle ("1 1 4 6", "1,1,4,6" or a list) as exact numbers; a ConfigError names a malformed one."""
    items = puzzle.replace(",", " ").split() if isinstance(puzzle, str) else list(puzzle)
    try:
        nums = [Fraction(str(x)) for x in items]
    except (ValueError, ZeroDivisionError):
        raise ConfigError(f"Game of 24 puzzle {puzzle!r}: expected numbers separated by spaces, e.g. '1 1 4 6'") from None
    if not 1 <= len(nums) <= 6:
        raise ConfigError(f"Game of 24 puzzle {puzzle!r}: expected 1-6 numbers, got {len(nums)}")
    return nums


def _eval(node: ast.AST) -> tuple[Fraction, list[Fraction]]:
    """(value, numbers used) of an arithmetic expression tree; anything else raises ValueError."""
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        v = Fraction(str(node.value))
        return v, [v]
    if isinstance(node, ast.BinOp) and type(node.op) in (ast.Add, ast.Sub, ast.Mult, ast.Div):
        (a, la), (b, lb) = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Add):
            return a + b, la + lb
        if isinstance(node.op, ast.Sub):
            return a - b, la + lb
        if isinstance(node.op, ast.Mult):
            return a * b, la + lb
        if b == 0:
            raise ZeroDivisionError
        return a / b, la + lb
    raise ValueError(f"unsupported expression element {type(node).__name__}")


def check_24(expression: str | None, puzzle: str | list[Any], *, target: int = 24) -> bool:
    """True iff `expression` uses exactly the puzzle's numbers (each once) with + - * / and equals `target`.

    A malformed puzzle raises ConfigError (the caller's data); a malformed expression is just False.
    """
    numbers = sorted(parse_numbers(puzzle))
    text = (expression or "").replace("×", "*").replace("÷", "/").split("=")[0].strip()
    try:
        value, used = _eval(ast.parse(text, mode="eval"))
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return False
    return value == target and sorted(used) == numbers


def extract_24_expression(text: str | None) -> str | None:
    r"""The expression a model's output proposes: the last `\boxed{}`, else the last line holding an
    arithmetic operation; LaTeX operators made Python, anything after "=" dropped. None when absent."""
    if not text:
        return None
    boxed = extract_boxed(text)
    cand = boxed if boxed is not None else next(
        (ln for ln in reversed(text.splitlines()) if re.search(r"\d\s*[-+*/x×÷]\s*\(?\d", ln)), None)
    if cand is None:
        return None
    cand = cand.replace("\\times", "*").replace("×", "*").replace("x", "*").replace("\\div", "/").replace("÷", "/")
    cand = cand.replace("\\left", "").replace("\\right", "").replace("$", "")
    return cand.split("=")[0].strip()


__all__ = ["check_24", "extract_24_expression", "parse_numbers"]
