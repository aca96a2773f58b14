r"""Correctness in one place, below the engines: answer extraction, normalisation, metrics, judging.

    from agentic_infer.verify import boxed_answer, judge_answers, score, write_verdicts
    pred = boxed_answer(output)            # the last \boxed{}, \text{} unwrapped
    write_verdicts(trajectory, {m: score(m, pred, gold, text=output) for m in ("em", "search_o1_em")})
    verdicts = await judge_answers(judge, [(question, pred, gold)], concurrency=8)

- `extract`: one function per answer format (`extract_answer(format, text)`, `ANSWER_FORMATS`).
- `normalize`, `qa`: SQuAD/HotpotQA normalisation; exact match, F1 (HotpotQA yes/no rule), cover-EM.
- `maths`: `math_equal` (math-verify, thread-safe, bounded by a timeout), `normalize_math_answer`, `last_number`.
- `game24`: the one Game-of-24 checker `check_24` and `extract_24_expression`.
- `registry`: the ONE metric registry, `METRICS` by name, `score(name, prediction, gold, text=...)`,
  `score_all`; `variants` registers the published systems' variants into it (search_o1_em, ...), task
  files register theirs; `rewards.write_verdicts` records verdicts.
- `judge`: `Verdict`, the `Judge` protocol, `MetricJudge` (any metric as a Judge).
- `judging`: `judge_answers` / `judge_answer`, the one rule for judging answers against gold aliases.
The engines, eval, synth and train all import from here; this package imports nothing above it.
Not covered: LLM judges (`agentic_infer.engines.judge`), code-execution metrics.
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
from agentic_infer.verify.judge import Judge, MetricJudge, Verdict
from agentic_infer.verify.judging import JudgeItem, judge_answer, judge_answers, no_answer
from agentic_infer.verify.maths import MathVerifier, last_number, math_equal, normalize_math_answer
from agentic_infer.verify.normalize import Gold, best_over_references, gold_list, normalize_answer
from agentic_infer.verify.qa import cover_exact_match, exact_match, f1_precision_recall, f1_score
from agentic_infer.verify.registry import (
    METRICS,
    RUNNER_METRICS,
    Metric,
    MetricSpec,
    Scored,
    describe,
    get_metric,
    metric,
    score,
    score_all,
)
from agentic_infer.verify.rewards import write_verdicts
from agentic_infer.verify.variants import backoff, search_o1_answer

__all__ = [
    "ANSWER_FORMATS",
    "METRICS",
    "RUNNER_METRICS",
    "Gold",
    "Judge",
    "JudgeItem",
    "MathVerifier",
    "Metric",
    "MetricJudge",
    "MetricSpec",
    "Scored",
    "Verdict",
    "answer_tag",
    "backoff",
    "best_over_references",
    "boxed_answer",
    "check_24",
    "cover_exact_match",
    "describe",
    "exact_match",
    "extract_24_expression",
    "extract_answer",
    "extract_boxed",
    "f1_precision_recall",
    "f1_score",
    "get_metric",
    "gold_list",
    "judge_answer",
    "judge_answers",
    "last_number",
    "math_equal",
    "metric",
    "no_answer",
    "normalize_answer",
    "normalize_math_answer",
    "parse_numbers",
    "score",
    "score_all",
    "search_o1_answer",
    "short_answer",
    "write_verdicts",
    "yes_no_answer",
]
