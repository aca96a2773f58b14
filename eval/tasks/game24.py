r"""Game of 24 (Tree-of-Thoughts release): combine four numbers with + - * / to make 24.

Format: CSV `Rank,Puzzles,...` where `Puzzles` = four numbers separated by spaces (ranks 901-1000
are the usual test set). Metric `game24_valid`: the answer (last `\boxed{}`, else the last line
holding an `=` or an expression) uses each given number exactly once and evaluates to 24 exactly
(fractions, no floats).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

from eval.metric_variants import Scored, metric
from eval.metrics import extract_boxed
from eval.tasks.base import Task, fail, need, read_rows

FORMAT = "Game of 24 CSV with columns Rank,Puzzles (Puzzles = four numbers separated by spaces)"
PROMPTS = {
    "direct": "Use the numbers {question} each exactly once with + - * / and parentheses to make 24. "
              "Write only the expression inside \\boxed{{}}, e.g. \\boxed{{(1+2+3)*4}}.",
    "cot": "Use the numbers {question} each exactly once with + - * / and parentheses to make 24. "
           "Think step by step, then write the expression inside \\boxed{{}}, e.g. \\boxed{{(1+2+3)*4}}.",
}


def load(path: Path) -> list[dict[str, Any]]:
    out = []
    for where, rec in read_rows(path, FORMAT):
        puzzle = str(need(rec, ("Puzzles", "puzzle", "numbers", "question"), path, where, FORMAT))
        nums = puzzle.split()
        if len(nums) != 4 or not all(n.isdigit() for n in nums):
            raise fail(path, where, f"Puzzles={puzzle!r} is not four whole numbers", FORMAT)
        rid = str(rec.get("Rank") or where)
        out.append({"id": f"game24-{rid}", "question": " ".join(nums), "gold": ["24"], "raw": rec})
    return out


def extract_expression(text: str | None) -> str | None:
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


def _value(node: ast.AST, used: list[int]) -> Fraction:
    if isinstance(node, ast.Expression):
        return _value(node.body, used)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        used.append(node.value)
        return Fraction(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
        a, b = _value(node.left, used), _value(node.right, used)
        if isinstance(node.op, ast.Add):
            return a + b
        if isinstance(node.op, ast.Sub):
            return a - b
        if isinstance(node.op, ast.Mult):
            return a * b
        if b == 0:
            raise ZeroDivisionError
        return a / b
    raise ValueError(f"not allowed in a 24 expression: {ast.dump(node)[:40]}")


def check_24(expression: str | None, numbers: str) -> bool:
    """Whether `expression` uses exactly the four `numbers` and equals 24."""
    if not expression:
        return False
    try:
        used: list[int] = []
        value = _value(ast.parse(expression, mode="eval"), used)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError):
        return False
    return value == 24 and Counter(used) == Counter(int(n) for n in numbers.split())


@metric("game24_valid", "Game of 24: the expression uses each number once and equals 24")
def _game24(s: Scored) -> float:
    return float(check_24(extract_expression(s.prediction) or extract_expression(s.text), s.example["question"]))


TASKS = [Task(name="game24", family="puzzle", description="Game of 24 (ToT release, ranked puzzles)",
              data_format=FORMAT, loader=load, metrics=("game24_valid",), primary="game24_valid",
              default_files=("puzzles/game24_ranked_1_900.csv",), prompts=PROMPTS, extract=extract_expression,
              engines=("direct", "cot", "deepconf", "lats", "rap"))]
