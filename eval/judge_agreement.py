"""How far to trust a judge: its verdicts on labelled pairs built from a task's gold answers.

    pairs = labelled_pairs(task.load(path), n=100, seed=0)     # half equivalent, half not
    report = await judge_agreement(judge, pairs)               # accuracy, balanced accuracy, TPR, TNR, AUC, ...
    # CLI: agentic eval judge-check --task hotpotqa --data PATH --judge URI [--judge-verdict yes-no]

Positives (label True) pair a question's gold answer (the reference) with an answer a careful grader
accepts: another of its gold aliases when the data has several, otherwise the same answer restated
("The answer is X."), which exact match rejects and a good judge accepts. Negatives (label False) pair
it with the gold answer of another question of the same file. Reported: accuracy and balanced accuracy
(0.5 = no better than always saying one label), true-positive and true-negative rates, ROC AUC of the
verdict score (P(Yes) or the vote share; 0.5 = chance), the share of INVALID verdicts, and the share
judged CORRECT. Any `Judge` works, so `MetricJudge` gives the rule-based baselines on the same pairs.
Not covered: near-miss negatives (a wrong year, a related entity); these pairs only bound a judge from below.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agentic_infer.engines.judge import INVALID
from agentic_infer.errors import ConfigError
from agentic_infer.verify import Judge, judge_answers


@dataclass(frozen=True)
class LabelledPair:
    question: str
    prediction: str
    reference: str
    equivalent: bool


def labelled_pairs(examples: Sequence[Mapping[str, Any]], *, n: int = 100, seed: int = 0) -> list[LabelledPair]:
    """`n` pairs (half positive, half negative) from examples with `question` and `gold` answers."""
    usable = [ex for ex in examples if ex.get("gold") and str(ex["gold"][0]).strip()]
    if len(usable) < 2 or n < 2:
        raise ConfigError(f"labelled_pairs: need n >= 2 (got {n}) and at least 2 examples with a gold answer "
                          f"(got {len(usable)})")
    rng = random.Random(seed)
    picked = [usable[i % len(usable)] for i in rng.sample(range(max(n, len(usable))), n)]
    pairs = []
    for i, ex in enumerate(picked):
        q, gold = ex.get("user_question", ex["question"]), [str(g).strip() for g in ex["gold"]]
        if i % 2 == 0:
            aliases = [g for g in gold[1:] if g and g.lower() != gold[0].lower()]
            pred = rng.choice(aliases) if aliases else f"The answer is {gold[0]}."
            pairs.append(LabelledPair(q, pred, gold[0], True))
        else:
            others = [o for o in usable if not {str(g).lower() for g in o["gold"]} & {g.lower() for g in gold}]
            if not others:
                raise ConfigError(f"labelled_pairs: every example shares the gold answer {gold[0]!r}; no negatives")
            pairs.append(LabelledPair(q, str(rng.choice(others)["gold"][0]), gold[0], False))
    return pairs


def roc_auc(scores: Sequence[float], labels: Sequence[bool]) -> float | None:
    """P(score of a random positive > score of a random negative), ties counted half; None without both."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return None
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


async def judge_agreement(judge: Judge, pairs: Sequence[LabelledPair], *, concurrency: int = 4) -> dict[str, Any]:
    """Score `pairs` with `judge`; returns the agreement figures (see the module docstring) and the verdicts."""
    verdicts = await judge_answers(judge, [(p.question, p.prediction, p.reference) for p in pairs],
                                   concurrency=concurrency)
    said = [v.label == "CORRECT" for v in verdicts]
    labels = [p.equivalent for p in pairs]
    tp = sum(s and y for s, y in zip(said, labels))
    tn = sum(not s and not y for s, y in zip(said, labels))
    n_pos, n_neg = sum(labels), len(labels) - sum(labels)
    tpr = tp / n_pos if n_pos else None
    tnr = tn / n_neg if n_neg else None
    return {
        "n": len(pairs), "positives": n_pos, "negatives": n_neg,
        "accuracy": (tp + tn) / len(pairs),
        "balanced_accuracy": (tpr + tnr) / 2 if tpr is not None and tnr is not None else None,
        "tpr": tpr, "tnr": tnr,
        "auc": roc_auc([v.score for v in verdicts], labels),
        "invalid_share": sum(v.label == INVALID for v in verdicts) / len(pairs),
        "correct_share": sum(said) / len(pairs),
        "verdicts": [{**asdict(p), "label": v.label, "score": v.score} for p, v in zip(pairs, verdicts)],
    }
