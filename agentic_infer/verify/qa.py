"""Short-answer QA metrics: exact match, token F1 (HotpotQA rules) and cover-EM, over normalised text.

Each takes one gold answer or a list (the best score over the list); a `None` prediction scores 0.
`f1_score` follows HotpotQA: 0 when either side normalises to yes / no / noanswer and the two differ.
Not covered: LLM judges of equivalence (`agentic_infer.engines.judge`), answer extraction (`verify.extract`).
"""

from __future__ import annotations

from collections import Counter

from agentic_infer.verify.normalize import Gold, best_over_references, normalize_answer

_YES_NO = ("yes", "no", "noanswer")


def exact_match(prediction: str | None, gold: Gold) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer, else 0.0."""
    return best_over_references(lambda p, g: float(normalize_answer(p) == normalize_answer(g)), prediction, gold)


def f1_precision_recall(prediction: str, gold: str) -> tuple[float, float, float]:
    """Token-level (F1, precision, recall) against one gold answer, HotpotQA rules (empty vs empty = 0)."""
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in _YES_NO or ref in _YES_NO) and pred != ref:
        return 0.0, 0.0, 0.0
    pt, rt = pred.split(), ref.split()
    same = sum((Counter(pt) & Counter(rt)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    p, r = same / len(pt), same / len(rt)
    return 2 * p * r / (p + r), p, r


def f1_score(prediction: str | None, gold: Gold) -> float:
    """Token-level F1 (HotpotQA's yes/no/noanswer rule), best over the gold answers."""
    return best_over_references(lambda p, g: f1_precision_recall(p, g)[0], prediction, gold)


def cover_exact_match(prediction: str | None, gold: Gold) -> float:
    """1.0 when a normalised gold answer is a substring of the normalised prediction (an empty gold never matches)."""
    def cover(p: str, g: str) -> float:
        ng = normalize_answer(g)
        return float(bool(ng) and ng in normalize_answer(p))

    return best_over_references(cover, prediction, gold)


__all__ = ["cover_exact_match", "exact_match", "f1_precision_recall", "f1_score"]
