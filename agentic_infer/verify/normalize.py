"""Answer normalisation (SQuAD = HotpotQA) and gold-answer lists shared by every metric.

- `normalize_answer(s)`: lower-case, drop punctuation, drop the articles a/an/the, collapse whitespace.
- `gold_list(gold)`: one gold answer or a list of them, checked, as a list.
- `best_over_references(metric, prediction, gold)`: multi-reference scoring (best over the list; a
  `None` prediction scores 0).
Not covered: math canonical forms (`verify.maths.normalize_math_answer`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence

from agentic_infer.errors import ConfigError

Gold = str | Sequence[str]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = set(string.punctuation)


def normalize_answer(s: str) -> str:
    """SQuAD/HotpotQA normalisation: lower-case, drop punctuation and articles, collapse whitespace."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def gold_list(gold: Gold) -> list[str]:
    """`gold` (one answer or several) as a non-empty list of strings; a ConfigError names anything else."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    if not golds or not all(isinstance(g, str) for g in golds):
        raise ConfigError(f"gold={gold!r}: expected a string or a non-empty list of strings")
    return golds


def best_over_references(metric: Callable[[str, str], float], prediction: str | None, gold: Gold) -> float:
    """Multi-reference scoring: the best `metric(prediction, g)` over the gold answers (0 for None)."""
    golds = gold_list(gold)
    if prediction is None:
        return 0.0
    return max(float(metric(prediction, g)) for g in golds)


__all__ = ["Gold", "best_over_references", "gold_list", "normalize_answer"]
