r"""Named metrics, including each published system's own variant, behind one registry.

    from eval.metric_variants import Scored, score, METRICS
    score(["em", "search_o1_acc"], Scored(prediction="Paris", gold=["Paris"], text=output))

A metric is `fn(Scored) -> float` (0..1). `Scored` carries the engine's extracted `prediction`, the
gold answers, the generated `text` (prompt excluded) and the example. Scoring and extraction are
`agentic_infer.verify`'s (em, f1, cover_em, math_equal are `verify.METRICS` themselves); the variants
differ in answer *extraction*, as the systems' code does:

| name | system | extraction | score |
|---|---|---|---|
| em, f1, cover_em | (SQuAD/HotpotQA) | the engine's prediction | EM / token F1 / gold-in-prediction |
| search_o1_em / _f1 / _acc | Search-o1 | last `\boxed{}` of the output (`\text{}` unwrapped); none = empty | EM / F1 / acc = gold-in-prediction |
| search_o1_*_backoff | Search-o1 | as above, an empty prediction replaced by the direct-generation run's | (computed by the runner with `--backoff DIR`) |
| search_r1_em | Search-R1 | last `<answer>` in the generated text (not the prompt: the reference's bug), else the engine's prediction | EM |
| r1_searcher_cover_em | R1-Searcher | last `<answer>`, else the engine's prediction | cover-EM |
| math_equal | (math-verify) | `\boxed{}` | math equivalence |
| math_equal_last_number | lm-eval-harness (GSM8K flexible-extract) | last number of the output | math equivalence |
| boxed_found | - | - | 1 when a `\boxed{}` answer was produced |
| judge_acc / r1_searcher_judge / asearcher_judge | LLM judge | engine prediction | binary equivalence verdict (runner, `--judge`) |

Task-specific metrics (BFCL AST match, Game of 24) register themselves from their task files.
Not covered: the LLM judges themselves (see `agentic_infer.engines.judge`), pass@k / maj@k (`eval.stats`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_infer import verify
from agentic_infer.errors import ConfigError
from agentic_infer.verify import (
    answer_tag,
    boxed_answer,
    cover_exact_match,
    exact_match,
    extract_boxed,
    f1_score,
    last_number,
    math_equal,
)


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
    fn: Callable[[Scored], float]
    description: str
    system: str | None = None


METRICS: dict[str, MetricSpec] = {}

# Metrics computed by the runner rather than from one `Scored` (names reserved here for the docs).
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
        raise ConfigError(f"metric {spec.name!r} is already registered")
    METRICS[spec.name] = spec
    return spec


def metric(name: str, description: str, system: str | None = None):
    def deco(fn: Callable[[Scored], float]) -> Callable[[Scored], float]:
        register_metric(MetricSpec(name, fn, description, system))
        return fn
    return deco


def _gold(s: Scored) -> list[str]:
    return [g for g in s.gold] or [""]


# ---------------------------------------------------------------------------------- extraction

def search_o1_answer(text: str | None) -> str:
    r"""Search-o1's QA extraction (`verify.boxed_answer`); '' when there is no `\boxed{}`."""
    return boxed_answer(text) or ""


def backoff(prediction: str | None, fallback: str | None) -> str | None:
    """Search-o1's answer backoff: an empty prediction takes the direct-generation run's prediction."""
    return fallback if not (prediction or "").strip() else prediction


# ---------------------------------------------------------------------------------- metrics

_PLAIN = {
    "em": "exact match after SQuAD normalisation, best over gold answers",
    "f1": "token F1 (HotpotQA rule for yes/no/noanswer), best over gold answers",
    "cover_em": "cover-EM: a normalised gold answer is a substring of the normalised prediction",
    "math_equal": "math equivalence of the \\boxed{} answer (math-verify, gold first)",
}
for _name, _description in _PLAIN.items():  # the engine's prediction scored by verify's metric of that name
    metric(_name, _description)(lambda s, _name=_name: verify.score(_name, s.prediction, _gold(s)))


@metric("search_o1_em", "Search-o1 EM: last \\boxed{} (\\text{} unwrapped), SQuAD EM", "Search-o1")
def _so1_em(s: Scored) -> float:
    return exact_match(search_o1_answer(s.text), _gold(s))


@metric("search_o1_f1", "Search-o1 F1 on its boxed extraction", "Search-o1")
def _so1_f1(s: Scored) -> float:
    return f1_score(search_o1_answer(s.text), _gold(s))


@metric("search_o1_acc", "Search-o1 acc: normalised gold contained in its boxed extraction", "Search-o1")
def _so1_acc(s: Scored) -> float:
    pred = search_o1_answer(s.text)
    return cover_exact_match(pred, _gold(s)) if pred else 0.0


@metric("search_r1_em", "Search-R1 EM: last <answer> of the generated text (else the engine's answer)", "Search-R1")
def _sr1(s: Scored) -> float:
    tag = answer_tag(s.text)
    return exact_match(tag if tag is not None else s.prediction, _gold(s))


@metric("r1_searcher_cover_em", "R1-Searcher cover-EM on the last <answer> (else the engine's answer)",
        "R1-Searcher")
def _r1s(s: Scored) -> float:
    tag = answer_tag(s.text)
    return cover_exact_match(tag if tag is not None else s.prediction, _gold(s))


@metric("math_equal_last_number", "lm-evaluation-harness GSM8K flexible-extract: math equivalence of the last "
        "number in the output (no \\boxed{} needed)", "lm-eval-harness")
def _math_last(s: Scored) -> float:
    num = last_number(s.text)
    return float(num is not None and math_equal(num, _gold(s)))


@metric("boxed_found", "share of outputs with a \\boxed{} answer (format compliance)")
def _boxed(s: Scored) -> float:
    return float(extract_boxed(s.text) is not None)


def describe(name: str) -> str:
    if name in METRICS:
        spec = METRICS[name]
        return f"{spec.system}: {spec.description}" if spec.system else spec.description
    return RUNNER_METRICS.get(name, name)


def score(names: Iterable[str], scored: Scored) -> dict[str, float]:
    """Every rule-based metric of `names` (runner metrics such as judge_acc are skipped)."""
    out = {}
    for n in names:
        if n in RUNNER_METRICS:
            continue
        if n not in METRICS:
            raise ConfigError(f"unknown metric {n!r}; known: {', '.join(sorted(METRICS))}")
        out[n] = float(METRICS[n].fn(scored))
    return out


__all__ = ["METRICS", "RUNNER_METRICS", "MetricSpec", "Scored", "backoff", "describe", "metric", "register_metric",
           "score", "search_o1_answer"]
