"""The safe calculator: correct arithmetic, refused code, bounded work."""

from __future__ import annotations

import math
import time

import pytest

from agentic_infer.tools import Calculator, evaluate_expression
from agentic_infer.tools.calculator import UnsupportedExpressionError


@pytest.mark.parametrize(("expression", "value"), [
    ("1 + 2 * 3", 7),
    ("2^10 + sqrt(16) * 3", 1036.0),
    ("2 ** 3 ** 2", 512),
    ("-2^2", -4),
    ("10 // 3", 3),
    ("10 % 4", 2),
    ("7 / 2", 3.5),
    ("factorial(20)", 2432902008176640000),
    ("comb(50, 3)", 19600),
    ("log(8, 2)", 3.0),
    ("round(pi, 3)", 3.142),
    ("max(1, 5, 3) - min(4, 2)", 3),
    ("3 × 4 ÷ 2", 6.0),
    ("2 ** -1", 0.5),
])
def test_values(expression, value):
    assert evaluate_expression(expression) == value


def test_floats_are_approximate():
    assert math.isclose(evaluate_expression("sin(pi / 6)"), 0.5)


@pytest.mark.parametrize("expression", [
    "__import__('os').system('echo hi')", "open('/etc/passwd')", "x + 1", "(1).real", "[1, 2][0]", "'a' * 3",
    "lambda: 1", "sqrt(x=4)", "True + 1", "1 if 1 else 2", "(1, 2)", "1 < 2", "print(1)",
])
def test_refuses_anything_but_arithmetic(expression):
    with pytest.raises(UnsupportedExpressionError):
        evaluate_expression(expression)


@pytest.mark.parametrize("expression", ["9**9**9", "2 ** 100000", "factorial(10**6)", "(10**3000) * (10**3000)",
                                        "comb(10**6, 5 * 10**5)"])
def test_huge_results_are_refused_before_computing(expression):
    start = time.monotonic()
    with pytest.raises(OverflowError):
        evaluate_expression(expression)
    assert time.monotonic() - start < 0.5


def test_length_and_depth_bounds():
    with pytest.raises(UnsupportedExpressionError, match="characters"):
        evaluate_expression("1+" * 600 + "1")
    with pytest.raises(UnsupportedExpressionError, match="nested"):
        evaluate_expression("(" * 80 + "1" + ")" * 80 + "+-" * 40 + "1", max_length=10_000)


@pytest.mark.parametrize(("expression", "error"), [
    ("1 / 0", "ZeroDivisionError: division by zero"),
    ("sqrt(-1)", "ValueError: math domain error"),
    ("1e308 * 10", "OverflowError: the result is too large for a float (infinite)"),
    ("2 +", "SyntaxError"),
    ("", "UnsupportedExpressionError: the expression is empty"),
])
async def test_tool_errors_are_results(expression, error):
    calc = Calculator()
    result = await calc(expression=expression)
    assert result.error.startswith(error), result.error
    assert calc.errors == 1


async def test_tool_formats_numbers():
    calc = Calculator()
    assert (await calc(expression="2**64")).content == "18446744073709551616"
    assert (await calc(expression="0.1 + 0.2")).content == "0.30000000000000004"
    assert calc.openai_schema()["function"]["name"] == "calculator"
