r"""Correctness in one place, below the engines: answer extraction, normalisation, metrics, judges.

    from agentic_infer.verify import boxed_answer, score, write_verdicts
    pred = boxed_answer(output)            # the last \boxed{}, \text{} unwrapped
    write_verdicts(trajectory, {m: score(m, pred, gold) for m in ("em", "f1")})

- `extract`: one function per answer format (`extract_answer(format, text)`, `ANSWER_FORMATS`).
- `normalize`, `qa`: SQuAD/HotpotQA normalisation; exact match, F1 (HotpotQA yes/no rule), cover-EM.
- `maths`: `math_equal` (math-verify, thread-safe, bounded by a timeout), `normalize_math_answer`, `last_number`.
- `game24`: the one Game-of-24 checker `check_24` and `extract_24_expression`.
- `registry`: `METRICS` by name and `score(name, prediction, gold)`; `rewards.write_verdicts` records them.
- `judge`: `Verdict`, the `Judge` protocol, `MetricJudge` (any metric as a Judge), `score_many`.
The engines, eval, synth and train all import from here; this package imports nothing above it.
Not covered: LLM judges (`agentic_infer.engines.judge`), code-execution metrics, task-specific
metrics that need the example (`eval.metric_variants`, `eval.tasks`).
"""

from agentic_infer.verify.extract import (
    ANSWER_FORMATS,
    answer_tag,
    boxed_answer,
    extract_answer,
    extract_boxed,
    short_answer,
    yes_no_answer,
)
from agentic_infer.verify.game24 import check_24, extract_24_expression, parse_numbers
from agentic_infer.verify.judge import Judge, JudgeItem, MetricJudge, Verdict, score_many
from agentic_infer.verify.maths import MathVerifier, last_number, math_equal, normalize_math_answer
from agentic_infer.verify.normalize import Gold, best_over_references, gold_list, normalize_answer
from agentic_infer.verify.qa import cover_exact_match, exact_match, f1_precision_recall, f1_score
from agentic_infer.verify.registry import METRICS, Metric, get_metric, score
from agentic_infer.verify.rewards import write_verdicts

__all__ = [
    "ANSWER_FORMATS",
    "METRICS",
    "Gold",
    "Judge",
    "JudgeItem",
    "MathVerifier",
    "Metric",
    "MetricJudge",
    "Verdict",
    "answer_tag",
    "best_over_references",
    "boxed_answer",
    "check_24",
    "cover_exact_match",
    "exact_match",
    "extract_24_expression",
    "extract_answer",
    "extract_boxed",
    "f1_precision_recall",
    "f1_score",
    "get_metric",
    "gold_list",
    "last_number",
    "math_equal",
    "normalize_answer",
    "normalize_math_answer",
    "parse_numbers",
    "score",
    "score_many",
    "short_answer",
    "write_verdicts",
    "yes_no_answer",
]
