"""The judge interface: `score(question, prediction, reference) -> Verdict`, and `MetricJudge`, a metric behind it.

    v = await MetricJudge("f1", threshold=0.5).score("Who?", "Barack Obama", ["Obama"])
    v.label, v.score, v.reason             # "CORRECT", 0.667, "f1"

Any object with an async `score` of that shape is a `Judge`: the rule-based `MetricJudge` here and
the LLM judges of `agentic_infer.engines.judge` alike, so eval, synth filters and rewards take either.
`reference` is one gold answer or the list of its aliases. A judge may set `no_answer_label` (the
label of an empty answer; "INCORRECT" by default). Judge many answers with `verify.judging.judge_answers`
(the one rule for empty answers and gold aliases).
Not covered: the LLM judges themselves (prompts, parsing, caching: `agentic_infer.engines.judge`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from agentic_infer.errors import ConfigError
from agentic_infer.verify.registry import Metric, get_metric, score


@dataclass(frozen=True)
class Verdict:
    """A judgement: `label` (e.g. CORRECT), `score` (1/0, a share of votes, or a 1-10 rating), `reason`."""

    label: str
    score: float
    reason: str = ""
    samples: tuple[str, ...] = ()
    cached: bool = False

    @property
    def correct(self) -> bool:
        return self.label == "CORRECT"

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "score": self.score, "reason": self.reason, "samples": list(self.samples),
                "cached": self.cached}


@runtime_checkable
class Judge(Protocol):
    async def score(self, question: str, prediction: str | None,
                    reference: str | Sequence[str] | None = None) -> Verdict: ...


class MetricJudge:
    """A metric behind the Judge interface (no LLM): a name of `verify.METRICS` or any `fn(prediction, gold)`.

    The label is CORRECT when the score reaches `threshold` (default 1.0; e.g. 0.5 for F1), the reason
    names the metric; `options` go to the metric (e.g. `timeout_s` for math_equal). The metric runs in
    a worker thread, so a slow one (math_equal) does not block the event loop.
    """

    def __init__(self, metric: str | Metric = "em", *, threshold: float = 1.0, name: str | None = None,
                 **options: Any):
        if isinstance(metric, str):
            get_metric(metric)
            self.fn, self.name = (lambda p, g, **o: score(metric, p, g, **o)), name or metric
        elif callable(metric):
            self.fn, self.name = metric, name or getattr(metric, "__name__", type(metric).__name__)
        else:
            raise ConfigError(f"MetricJudge: metric={metric!r}; pass a name of verify.METRICS or a function "
                              "fn(prediction, gold) -> float")
        self.threshold = threshold
        self.options = options

    async def score(self, question: str, prediction: str | None, reference: str | Sequence[str] | None = None) -> Verdict:
        if reference is None:
            raise ConfigError(f"MetricJudge({self.name!r}).score needs a reference answer")
        s = float(await asyncio.to_thread(self.fn, prediction, reference, **self.options))
        return Verdict("CORRECT" if s >= self.threshold else "INCORRECT", s, self.name)


__all__ = ["Judge", "MetricJudge", "Verdict"]
