r"""Game of 24 (Tree-of-Thoughts release): combine four numbers with + - * / to make 24.

Format: CSV `Rank,Puzzles,...` where `Puzzles` = four numbers separated by spaces (ranks 901-1000
are the usual test set). Metric `game24_valid`: the answer (last `\boxed{}`, else the last line
holding an expression) uses each given number exactly once and evaluates to 24 exactly (fractions);
extraction and checker are `agentic_infer.verify.game24`'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_infer.tasks.base import Task, fail, need, read_rows
from agentic_infer.verify import check_24, extract_24_expression
from agentic_infer.verify.registry import Scored, metric

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


@metric("game24_valid", "Game of 24: the expression uses each number once and equals 24")
def _game24(s: Scored) -> float:
    expression = extract_24_expression(s.prediction) or extract_24_expression(s.text)
    return float(check_24(expression, s.example["question"]))


TASKS = [Task(name="game24", family="puzzle", description="Game of 24 (ToT release, ranked puzzles)",
              data_format=FORMAT, loader=load, metrics=("game24_valid",), primary="game24_valid",
              default_files=("puzzles/game24_ranked_1_900.csv",), prompts=PROMPTS, extract=extract_24_expression,
              engines=("direct", "cot", "deepconf", "lats", "rap"))]
