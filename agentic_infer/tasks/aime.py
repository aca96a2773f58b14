"""AIME (2024 here; any year in the same layout): integer answers 0-999. Problems (c) MAA.

Format: JSON Lines `{id, problem, answer, ...}`.
"""

from agentic_infer.tasks._math import math_loader, math_task

FORMAT = "AIME {id, problem, answer} JSON Lines"
ALIASES = {"aime": ("aime24", "aime2024", "aime25")}
TASKS = [math_task("aime", "AIME (integer answers; problems (c) MAA)", FORMAT, ("math/aime24_test.jsonl",),
                   math_loader("aime", FORMAT))]
