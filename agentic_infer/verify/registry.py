r"""Metrics by name: ONE registry for eval rows, synth judge steps and filters, and RL rewards alike.

    score("em", "Paris", ["Paris", "City of Paris"])                      # 1.0
    score("search_o1_em", None, ["Paris"], text=r"so \boxed{Paris}")      # 1.0 (Search-o1's own extraction)
    score("math_equal", "0.5", "\\frac{1}{2}", timeout_s=5)               # 1.0
    score_all(["em", "f1"], Scored("Paris", ["Paris"], text=output))      # {"em": 1.0, "f1": 1.0}

`METRICS` maps a metric's name (the name its verdicts carry in `Trajectory.rewards` and in eval rows) to a
`MetricSpec` whose `fn(Scored, **options) -> float` reads what it needs of `Scored`: the engine's extracted
`prediction`, the gold answers, the generated `text` (prompt excluded; the published systems' variants extract
from it) and the `example` (task metrics). Registered here: em, f1, cover_em, math_equal (the engine's
prediction scored by `verify.qa` / `verify.maths`); `verify.variants` registers the published systems'
variants (search_o1_em, search_r1_em, ...), and task files register theirs (`agentic_infer.tasks.game24`,
`bfcl`) with `@metric(name, description)`. `RUNNER_METRICS` are names whose values come from elsewhere (LLM
judges, Search-o1's backoff): reserved, documented, never computed by `score`.
Not covered: the LLM judges (`agentic_infer.engines.judge`), pass@k / maj@k (`eval.stats`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.verify.maths import math_equal
from agentic_infer.verify.normalize import Gold
from agentic_infer.verify.qa import cover_exact_match, exact_match, f1_score

Metric = Callable[..., float | bool]  # a plain `fn(prediction, gold, **options)` (e.g. for `MetricJudge`)


@dataclass(frozen=True)
class Scored:
    """What a metric sees for one prediction."""

    prediction: str | None
    gold: Sequence[str]
    text: str = ""
    example: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    name: str
    fn: Callable[..., float]
    description: str
    system: str | None = None


METRICS: dict[str, MetricSpec] = {}

RUNNER_METRICS = {
    "judge_acc": "LLM-judge accuracy: binary semantic equivalence verdict (--judge URI)",
    "simpleqa_not_attempted": "SimpleQA grader: share of NOT_ATTEMPTED answers (judge_acc = share CORRECT)",
    "r1_searcher_judge": "R1-Searcher's LLM-judge accuracy (same binary equivalence judge)",
    "asearcher_judge": "ASearcher's LLM-judge accuracy (same binary equivalence judge, prediction truncated)",
    "search_o1_em_backoff": "Search-o1 EM with answer backoff (empty prediction -> direct run's)",
    "search_o1_f1_backoff": "Search-o1 F1 with answer backoff",
    "search_o1_acc_backoff": "Search-o1 acc with answer backoff",
}


def register_metric(spec: MetricSpec, *, replace: bool = True) -> MetricSpec:
    if spec.name in METRICS and not replace:
        raise ConfigError(f"metric {spec.name!r} is already registered; pick another name or pass replace=True")
    METRICS[spec.name] = spec
    return spec


def metric(name: str, description: str, system: str | None = None):
    """Register `fn(Scored, **options) -> float` as metric `name` (a decorator)."""
    def deco(fn: Callable[..., float]) -> Callable[..., float]:
        register_metric(MetricSpec(name, fn, description, system))
        return fn
    return deco


def get_metric(name: str) -> MetricSpec:
    """The metric `name`; a ConfigError lists the known names (and says where a reserved one comes from)."""
    spec = METRICS.get(name)
    if spec is not None:
        return spec
    if name in RUNNER_METRICS:
        raise ConfigError(f"metric {name!r} is not rule-based ({RUNNER_METRICS[name]}); it is written by the judging "
                          "phase or the runner, not computed by verify.score")
    raise ConfigError(f"metric {name!r}: unknown; choose one of {sorted(METRICS)} (or register one with "
                      "verify.metric)")


def golds(gold: Gold | None) -> list[str]:
    """The gold answers as a list (one string -> [it]; an empty list -> [""], which only an empty answer matches)."""
    if gold is None:
        raise ConfigError("gold=None: a metric needs the gold answer(s); pass the example's `gold` list")
    return [gold] if isinstance(gold, str) else (list(gold) or [""])


def score(metric: str, prediction: str | None, gold: Gold | None, *, text: str = "",
          example: Mapping[str, Any] | None = None, **options: Any) -> float:
    """Metric `metric` of `prediction` against `gold` (one answer or aliases: the best over them), as a float.

    `text` is the generated output (the published variants extract their own answer from it), `example` the
    item (task metrics); `options` go to the metric (e.g. `timeout_s` for math_equal).
    """
    spec = get_metric(metric)
    return float(spec.fn(Scored(prediction, golds(gold), text, example or {}), **options))


def score_all(names: Iterable[str], scored: Scored) -> dict[str, float]:
    """`score` of every rule-based metric of `names` for one item (`RUNNER_METRICS` names are skipped)."""
    return {n: score(n, scored.prediction, scored.gold, text=scored.text, example=scored.example)
            for n in names if n not in RUNNER_METRICS}


def describe(name: str) -> str:
    """A metric's one-line description (its system first, when it is a published variant)."""
    if name in METRICS:
        spec = METRICS[name]
        return f"{spec.system}: {spec.description}" if spec.system else spec.description
    return RUNNER_METRICS.get(name, name)


# the engine's prediction scored by the plain metrics (best over the gold answers)
metric("em", "exact match after SQuAD normalisation, best over gold answers")(
    lambda s: exact_match(s.prediction, s.gold))
metric("f1", "token F1 (HotpotQA rule for yes/no/noanswer), best over gold answers")(
    lambda s: f1_score(s.prediction, s.gold))
metric("cover_em", "cover-EM: a normalised gold answer is a substring of the normalised prediction")(
    lambda s: cover_exact_match(s.prediction, s.gold))
metric("math_equal", "math equivalence of the \\boxed{} answer (math-verify, gold first)")(
    lambda s, *, timeout_s=5.0: float(math_equal(s.prediction, s.gold, timeout_s=timeout_s)))


__all__ = ["METRICS", "RUNNER_METRICS", "Metric", "MetricSpec", "Scored", "describe", "get_metric", "golds", "metric",
           "register_metric", "score", "score_all"]
