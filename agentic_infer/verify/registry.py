"""Metrics by name: one function per metric for eval, synth filters and RL rewards alike.

    score("em", "Paris", ["Paris", "City of Paris"])          # 1.0
    score("math_equal", "0.5", "\\frac{1}{2}", timeout_s=5)   # 1.0

`METRICS` maps a metric's name (the name its verdicts carry in `Trajectory.rewards` and in eval rows)
to `fn(prediction, gold, **options) -> float | bool`. Add an entry to make a new metric available
everywhere. Not covered: metrics that read more than (prediction, gold), such as the published
systems' extraction variants and task metrics (`eval.metric_variants`), and LLM judges.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.verify.maths import math_equal
from agentic_infer.verify.normalize import Gold
from agentic_infer.verify.qa import cover_exact_match, exact_match, f1_score

Metric = Callable[..., float | bool]

METRICS: dict[str, Metric] = {
    "em": exact_match,
    "f1": f1_score,
    "cover_em": cover_exact_match,
    "math_equal": math_equal,
}


def get_metric(name: str) -> Metric:
    """The function of metric `name`; a ConfigError lists the known names."""
    fn = METRICS.get(name)
    if fn is None:
        raise ConfigError(f"metric {name!r}: unknown; choose one of {sorted(METRICS)} (or add it to verify.METRICS)")
    return fn


def score(metric: str, prediction: str | None, gold: Gold, **options: Any) -> float:
    """`METRICS[metric](prediction, gold, **options)` as a float (0.0 for a None prediction)."""
    return float(get_metric(metric)(prediction, gold, **options))


__all__ = ["METRICS", "Metric", "get_metric", "score"]
