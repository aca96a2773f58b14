r"""DeepConf (Deep Think with Confidence): confidence measures and confidence-filtered voting.

Pure functions over per-token confidences (numpy only), shared by the engine (`engine.DeepConf`),
the replay simulator (`replay`) and RAP-Aggregation's DeepConf weighting:

- `token_confidence(top_logprobs, k=20)`: C_i = -(1/k) * sum of the top-k candidate logprobs at
  one position (larger = the model was more certain).
- `group_confidences(token_confs, window=2048)`: sliding-window means, stride 1, full windows only;
  a trace shorter than the window has one group, the mean of all its tokens.
- `trace_confidence(token_confs, metric)`: `mean` (all tokens), `bottom10` (mean of the lowest
  max(1, floor(#groups/10)) groups), `lowest` (the minimum group), `tail` (mean of the last
  `tail` tokens).
- `answer_weights` / `vote`: majority or confidence-weighted voting, optionally keeping only the
  traces at or above the (1-eta) percentile (numpy's default linear interpolation) or above a fixed
  threshold. `None` answers never vote, and the percentile is taken over the answered traces only.
  Ties go to the answer seen first.
- Online helpers: `online_threshold` (percentile of the warm-up traces' lowest-group confidences,
  named by variant: "low" keeps the top 10% -> 90th percentile, "high" keeps the top 90% -> 10th
  percentile), `GroupTracker` (running window while streaming), `stop_position` (where a recorded
  trace would have been stopped), `leading_share` (the consensus measure beta).

Where the official code differs we follow the paper: its library's default percentile means
DeepConf-high in one entry point and -low in another (we name variants, never bare percentiles); its
final answer is an unweighted majority (ours is confidence-weighted); it has no tau consensus stop
(the engine has one).

Not covered here: sampling (see `engine`), answer extraction (the engine's `extract_answer`).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from agentic_infer.errors import ConfigError

METRICS = ("mean", "bottom10", "lowest", "tail")
#: eta (the fraction of traces kept) of each named variant
VARIANT_KEEP = {"low": 0.10, "high": 0.90}


def token_confidence(top_logprobs: Iterable[Any], k: int = 20) -> float:
    """-mean of the top-k candidate logprobs at one position.

    `top_logprobs` holds floats or objects with a `.logprob` (`TopLogprob`). When more than `k` are
    given (some backends add the sampled token to the top k) the k largest are used; when fewer, all
    of them. Non-finite values (-inf from a masked distribution) are ignored.
    """
    if not isinstance(k, int) or k < 1:
        raise ConfigError(f"token_confidence: k={k!r} must be an integer >= 1 (the paper uses k=20)")
    vals = [float(getattr(x, "logprob", x)) for x in top_logprobs]
    vals = [v for v in vals if math.isfinite(v)]
    if not vals:
        raise ConfigError("token_confidence: no finite candidate logprobs at this position; request top-k "
                          "alternatives from the backend, e.g. SamplingParams(logprobs=20)")
    if len(vals) > k:
        vals = heapq.nlargest(k, vals)
    return -sum(vals) / len(vals)


def token_confidences(logprobs: Sequence[Any], k: int = 20) -> np.ndarray:
    """Per-token confidences of a completion (`Completion.logprobs`: TokenLogprob with `.top`)."""
    return np.array([token_confidence(t.top, k) for t in logprobs], dtype=np.float64)


def _confs(token_confs: Sequence[float] | np.ndarray) -> np.ndarray:
    x = np.asarray(token_confs, dtype=np.float64)
    if x.ndim != 1:
        raise ConfigError(f"token confidences must be a 1-D sequence, got shape {x.shape}")
    return x


def _check_window(name: str, value: int) -> None:
    if not isinstance(value, (int, np.integer)) or value < 1:
        raise ConfigError(f"{name}={value!r} must be an integer >= 1 (tokens)")


def group_confidences(token_confs: Sequence[float] | np.ndarray, window: int = 2048) -> np.ndarray:
    """Sliding-window means (stride 1, full windows only; one group = the mean when shorter; empty -> [])."""
    _check_window("window", window)
    x = _confs(token_confs)
    n = len(x)
    if n == 0:
        return np.zeros(0)
    if n < window:
        return np.array([x.mean()])
    c = np.concatenate(([0.0], np.cumsum(x)))
    return (c[window:] - c[:-window]) / window


def trace_confidence(token_confs: Sequence[float] | np.ndarray, metric: str = "bottom10", window: int = 2048,
                     tail: int = 2048) -> float:
    """One trace's confidence: `mean`, `bottom10`, `lowest` or `tail`. An empty trace scores 0.0, the minimum."""
    if metric not in METRICS:
        raise ConfigError(f"trace_confidence: metric={metric!r}; choose one of {METRICS}")
    _check_window("tail", tail)
    x = _confs(token_confs)
    if len(x) == 0:
        return 0.0
    if metric == "mean":
        return float(x.mean())
    if metric == "tail":
        return float(x[-tail:].mean())
    groups = group_confidences(x, window)
    if metric == "lowest":
        return float(groups.min())
    n = max(1, len(groups) // 10)
    return float(np.partition(groups, n - 1)[:n].mean())


def trace_confidences(token_confs: Sequence[float] | np.ndarray, window: int = 2048,
                      tail: int = 2048) -> dict[str, float]:
    """All four trace confidences at once: {"mean", "bottom10", "lowest", "tail"}."""
    x = _confs(token_confs)
    return {m: trace_confidence(x, m, window, tail) for m in METRICS}


def answer_weights(answers: Sequence[Hashable | None], confidences: Sequence[float] | None = None,
                   keep_top: float | None = None, *, min_confidence: float | None = None) -> dict[Any, float]:
    """The vote each answer gets, in first-seen order: {answer: count or summed confidence}.

    Traces without an answer (None) never vote. `keep_top=eta` keeps the answered traces whose
    confidence is >= the (1-eta) percentile of the answered traces' confidences (numpy's default
    linear interpolation); `min_confidence` keeps those >= a fixed threshold (online mode). Both
    need `confidences`; with confidences the vote is weighted by them.
    """
    answers = list(answers)
    if confidences is None:
        if keep_top is not None or min_confidence is not None:
            raise ConfigError("answer_weights: keep_top/min_confidence filter by confidence; pass confidences")
        conf = np.ones(len(answers))
    else:
        conf = np.asarray(confidences, dtype=np.float64)
        if conf.shape != (len(answers),):
            raise ConfigError(f"answer_weights: {len(answers)} answers but confidences of shape {conf.shape}; "
                              "pass one confidence per answer")
        if not np.all(np.isfinite(conf)):
            raise ConfigError(f"answer_weights: confidences must be finite, got {conf.tolist()}")
    if keep_top is not None and not (isinstance(keep_top, (int, float)) and 0 < keep_top <= 1):
        raise ConfigError(f"keep_top={keep_top!r} must be a fraction in (0, 1] (0.1 = DeepConf-low, 0.9 = -high)")
    idx = [i for i, a in enumerate(answers) if a is not None]
    if keep_top is not None and idx:
        cut = float(np.percentile(conf[idx], 100.0 * (1.0 - keep_top)))
        idx = [i for i in idx if conf[i] >= cut]
    if min_confidence is not None:
        idx = [i for i in idx if conf[i] >= min_confidence]
    out: dict[Any, float] = {}
    for i in idx:
        out[answers[i]] = out.get(answers[i], 0.0) + float(conf[i])
    return out


def _leader(weights: Mapping[Any, float]) -> Any:
    best, best_w = None, -math.inf
    for a, w in weights.items():  # strict '>' keeps the first-seen answer on ties
        if w > best_w:
            best, best_w = a, w
    return best


def vote(answers: Sequence[Hashable | None], confidences: Sequence[float] | None = None,
         keep_top: float | None = None, *, min_confidence: float | None = None) -> Any:
    """The winning answer (None when no trace has an answer); see `answer_weights` for the rules."""
    return _leader(answer_weights(answers, confidences, keep_top, min_confidence=min_confidence))


def leading_share(weights: Mapping[Any, float]) -> tuple[Any, float]:
    """(leading answer, its share of the total vote) - the consensus beta of online mode; (None, 0.0) if empty."""
    if not weights:
        return None, 0.0
    lead = _leader(weights)
    total = sum(weights.values())
    return lead, (weights[lead] / total if total > 0 else 0.0)


def variant_keep(variant: str) -> float:
    """eta of a named variant: "low" -> 0.1 (keep the top 10%), "high" -> 0.9."""
    if variant not in VARIANT_KEEP:
        raise ConfigError(f"variant={variant!r}; choose 'low' (keep the top 10%) or 'high' (keep the top 90%)")
    return VARIANT_KEEP[variant]


def online_threshold(warmup_lowest: Sequence[float], variant: str = "low") -> float:
    """The stop threshold s: the (1-eta) percentile of the warm-up traces' lowest-group confidences."""
    eta = variant_keep(variant)
    x = np.asarray(warmup_lowest, dtype=np.float64)
    if x.size == 0:
        raise ConfigError("online_threshold: no warm-up confidences; run at least one warm-up trace")
    return float(np.percentile(x, 100.0 * (1.0 - eta)))


def stop_position(token_confs: Sequence[float] | np.ndarray, threshold: float, window: int = 2048) -> int | None:
    """How many tokens a streamed trace would have generated before being stopped, or None (never stopped).

    The check runs once the window is full: after token t >= window, the mean of the last `window`
    tokens is compared with `threshold` and the trace stops when it is strictly below.
    """
    x = _confs(token_confs)
    if len(x) < window:
        return None
    groups = group_confidences(x, window)
    below = np.flatnonzero(groups < threshold)
    return int(below[0]) + window if below.size else None


class GroupTracker:
    """Running mean of the last `window` token confidences while a trace streams."""

    def __init__(self, window: int = 2048):
        _check_window("window", window)
        self.window = window
        self._buf: deque[float] = deque()
        self._sum = 0.0
        self.lowest: float | None = None  # lowest full-window mean so far

    def push(self, conf: float) -> float | None:
        """Add one token; return the current group confidence once the window is full, else None."""
        self._buf.append(conf)
        self._sum += conf
        if len(self._buf) > self.window:
            self._sum -= self._buf.popleft()
        if len(self._buf) < self.window:
            return None
        g = self._sum / self.window
        self.lowest = g if self.lowest is None else min(self.lowest, g)
        return g


__all__ = [
    "METRICS",
    "VARIANT_KEEP",
    "GroupTracker",
    "answer_weights",
    "group_confidences",
    "leading_share",
    "online_threshold",
    "stop_position",
    "token_confidence",
    "token_confidences",
    "trace_confidence",
    "trace_confidences",
    "variant_keep",
    "vote",
]
