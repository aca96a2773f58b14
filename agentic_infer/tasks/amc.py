"""AMC (2023 here): answers stored as floats (`27.0` -> gold `27`). Problems (c) MAA.

Format: JSON Lines `{id, problem, answer: float, url}`.
"""

from agentic_infer.tasks._math import math_loader, math_task

FORMAT = "AMC {id, problem, answer: number} JSON Lines"
ALIASES = {"amc": ("amc23", "amc2023")}
TASKS = [math_task("amc", "AMC 2023 (numeric answers; problems (c) MAA)", FORMAT, ("math/amc23_test.jsonl",),
                   math_loader("amc", FORMAT))]
