"""Transitional alias of `agentic_infer.verify` for modules not yet moved over (the lead deletes it)."""

from agentic_infer.verify import (
    MathVerifier,
    best_over_references,
    cover_exact_match,
    exact_match,
    extract_boxed,
    f1_precision_recall,
    f1_score,
    last_number,
    math_equal,
    normalize_answer,
    normalize_math_answer,
)

__all__ = [
    "MathVerifier",
    "best_over_references",
    "cover_exact_match",
    "exact_match",
    "extract_boxed",
    "f1_precision_recall",
    "f1_score",
    "last_number",
    "math_equal",
    "normalize_answer",
    "normalize_math_answer",
]
