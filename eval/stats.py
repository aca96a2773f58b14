"""Statistics for eval summaries: bootstrap intervals, pass@k, maj@k.

- `bootstrap_ci(values, n_boot=1000, level=0.95, seed=0)`: percentile bootstrap of the mean.
- `pass_at_k(n, c, k)`: the unbiased estimator of Chen et al. (2021), 1 - C(n-c, k) / C(n, k).
- `pass_hat_k(n, c, k)`: tau-bench's pass^k, C(c, k) / C(n, k): all of k samples drawn from n are correct.
- `majority(answers, key=...)`: the most frequent answer (ties: the earliest seen), for maj@k.
Not covered: paired tests between runs (the report shows per-question diffs instead).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

from agentic_infer.errors import ConfigError


def bootstrap_ci(values: Sequence[float], *, n_boot: int = 1000, level: float = 0.95,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of `values` ((nan, nan) when empty)."""
    if not 0 < level < 1:
        raise ConfigError(f"level={level!r}: must be in (0, 1)")
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan")
    if x.size == 1 or np.all(x == x[0]):
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, x.size, size=(n_boot, x.size))].mean(axis=1)
    lo, hi = np.quantile(means, [(1 - level) / 2, 1 - (1 - level) / 2])
    return float(lo), float(hi)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn from n (c of them correct) is correct."""
    if not 0 <= c <= n or k < 1:
        raise ConfigError(f"pass_at_k(n={n}, c={c}, k={k}): need 0 <= c <= n and k >= 1")
    if k > n:
        raise ConfigError(f"pass_at_k: k={k} exceeds the number of samples n={n}")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all k samples drawn from n (c of them correct) are correct (tau-bench's pass^k)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ConfigError(f"pass_hat_k(n={n}, c={c}, k={k}): need 0 <= c <= n and 1 <= k <= n")
    return math.comb(c, k) / math.comb(n, k)


def majority(answers: Sequence[Any], *, key: Callable[[Any], Hashable] | None = None) -> Any:
    """The most common non-empty answer (grouped by `key`), earliest on ties; None when all are empty."""
    key = key or (lambda a: a)
    counts: dict[Hashable, int] = {}
    first: dict[Hashable, Any] = {}
    for a in answers:
        if a is None or (isinstance(a, str) and not a.strip()):
            continue
        k = key(a)
        counts[k] = counts.get(k, 0) + 1
        first.setdefault(k, a)
    if not counts:
        return None
    best = max(counts.values())
    return next(first[k] for k in first if counts[k] == best)


def summarize_values(values: Sequence[float], *, seed: int = 0) -> dict[str, float]:
    lo, hi = bootstrap_ci(values, seed=seed)
    mean = float(np.mean(values)) if len(values) else float("nan")
    return {"mean": mean, "ci95_low": lo, "ci95_high": hi, "n": len(values)}
