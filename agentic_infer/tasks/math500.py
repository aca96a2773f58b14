"""MATH-500: the 500-problem MATH subset of "Let's Verify Step by Step"; gold = `answer` (LaTeX).

Format: JSON Lines `{problem, solution, answer, subject, level, unique_id}`.
"""

from agentic_infer.tasks._math import math_loader, math_task

FORMAT = "MATH-500 {problem, answer, solution, unique_id} JSON Lines"
ALIASES = {"math500": ("math-500", "math")}
TASKS = [math_task("math500", "MATH-500 (competition math, LaTeX answers)", FORMAT, ("math/math500_test.jsonl",),
                   math_loader("math500", FORMAT))]
