"""GSM8K: grade-school math word problems; the gold answer follows `#### ` in the solution.

Format: JSON Lines `{question, answer}` where `answer` ends with `#### 72` (commas allowed).
Metrics: `math_equal` on the `\\boxed{}` answer (primary) and lm-eval-harness's flexible extraction
(`math_equal_last_number`: the last number of the output), which credits models that do not box.
"""

from __future__ import annotations

from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.tasks._math import MATH_METRICS, math_loader, math_task

FORMAT = "GSM8K {question, answer: '...#### 72'} JSON Lines"


def final_answer(solution: Any) -> str:
    text = str(solution)
    if "####" not in text:
        raise ConfigError(f"GSM8K answer has no '#### <answer>' line: {text[-80:]!r}; expected {FORMAT}")
    return text.rsplit("####", 1)[1].strip().replace(",", "")


TASKS = [math_task("gsm8k", "GSM8K test (grade-school math)", FORMAT, ("math/gsm8k_test.jsonl",),
                   math_loader("gsm8k", FORMAT, question=("question",), gold_fn=final_answer),
                   metrics=(*MATH_METRICS, "math_equal_last_number"))]
