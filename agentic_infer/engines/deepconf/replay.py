"""Replay DeepConf over recorded traces: the paper's way of evaluating online mode without a GPU.

A pool of fully generated traces per question (answer + per-token confidences, e.g. the
trajectories of an offline `DeepConf` rollout on a strong model) is shuffled; `replay_online` then plays
Algorithm 2 on that order: the first `warmup` traces set the threshold, each further trace costs
the tokens up to where it would have been stopped (`stop_position`) or all of them, and sampling
stops at the tau consensus or the budget. `replay_offline` votes over the first `budget` traces of
the same order run to completion (the baseline). Averaging over many random orders gives the
paper's accuracy-versus-tokens curves (`bench/deepconf.py` does that and plots them).

    pool = [ReplayTrace.from_trajectory(t) for t in rollout.trajectories]
    out = replay_online(pool, budget=32, warmup=16, window=64, rng=np.random.default_rng(0))

Not covered: traces stopped in the recording itself (a pool must hold complete traces).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from agentic_infer.engines.deepconf.confidence import (
    METRICS,
    answer_weights,
    group_confidences,
    leading_share,
    online_threshold,
    trace_confidences,
)
from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory


@dataclass
class ReplayTrace:
    """A recorded complete trace: its (normalised) answer and per-token confidences."""

    answer: Hashable | None
    token_confs: np.ndarray
    _cache: dict[tuple[int, int], Any] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.token_confs = np.asarray(self.token_confs, dtype=np.float64)

    @property
    def tokens(self) -> int:
        return len(self.token_confs)

    def groups(self, window: int) -> np.ndarray:
        key = (window, -1)
        if key not in self._cache:
            self._cache[key] = group_confidences(self.token_confs, window)
        return self._cache[key]

    def confidences(self, window: int, tail: int) -> dict[str, float]:
        key = (window, tail)
        if key not in self._cache:
            self._cache[key] = trace_confidences(self.token_confs, window, tail)
        return self._cache[key]

    def stop_at(self, threshold: float, window: int) -> int | None:
        """Tokens generated before an online run would stop this trace (None: it runs to the end)."""
        if self.tokens < window:
            return None
        below = np.flatnonzero(self.groups(window) < threshold)
        return int(below[0]) + window if below.size else None

    @classmethod
    def from_trajectory(cls, traj: Trajectory) -> ReplayTrace:
        """From a DeepConf trajectory (its model segment's `token_confidences` and its vote key)."""
        model = [s for s in traj.segments if s.kind == "model"]
        if not model or "token_confidences" not in model[-1].metadata:
            raise ConfigError(f"trajectory {traj.id}: no model segment with 'token_confidences'; record the pool "
                              "with the DeepConf engine")
        dc = traj.metadata.get("deepconf", {})
        if dc.get("stopped_early") or dc.get("cancelled"):
            raise ConfigError(f"trajectory {traj.id} was stopped early; a replay pool needs complete traces "
                              "(record it in offline mode)")
        return cls(dc.get("key", traj.answer), np.asarray(model[-1].metadata["token_confidences"]))


@dataclass
class ReplayOutcome:
    answer: Hashable | None
    tokens: int
    traces: int
    stopped: int
    threshold: float | None
    consensus: float
    stop_reason: str


def _order(pool: Sequence[ReplayTrace], budget: int, rng: np.random.Generator) -> list[ReplayTrace]:
    if budget < 1 or budget > len(pool):
        raise ConfigError(f"replay: budget={budget} must be in 1..{len(pool)} (the pool size); record more traces")
    return [pool[i] for i in rng.permutation(len(pool))[:budget]]


def replay_online(pool: Sequence[ReplayTrace], *, budget: int, warmup: int = 16, variant: str = "low",
                  tau: float | None = 0.95, window: int = 2048, rng: np.random.Generator) -> ReplayOutcome:
    """One online DeepConf run over a random order of the pool (sequential, concurrency 1; tau=None: no consensus stop)."""
    if not 1 <= warmup <= budget:
        raise ConfigError(f"replay_online: warmup={warmup} must be in 1..budget ({budget})")
    order = _order(pool, budget, rng)
    warm = order[:warmup]
    lowest = [t.confidences(window, window)["lowest"] for t in warm]
    s = online_threshold(lowest, variant)
    voters: list[tuple[Hashable, float]] = [(t.answer, c) for t, c in zip(warm, lowest, strict=True)
                                            if t.answer is not None and c >= s]
    tokens = sum(t.tokens for t in warm)
    used, stopped = warmup, 0

    def share() -> tuple[Any, float]:
        return leading_share(answer_weights([a for a, _ in voters], [c for _, c in voters]))

    tau = np.inf if tau is None else tau
    lead, beta = share()
    for t in order[warmup:]:
        if beta >= tau:
            break
        used += 1
        cut = t.stop_at(s, window)
        if cut is not None:
            tokens += cut
            stopped += 1
            continue
        tokens += t.tokens
        low = t.confidences(window, window)["lowest"]
        if t.answer is not None and low >= s:
            voters.append((t.answer, low))
            lead, beta = share()
    reason = "consensus" if beta >= tau and used < budget else "budget"
    return ReplayOutcome(lead, tokens, used, stopped, s, beta, reason)


def replay_offline(pool: Sequence[ReplayTrace], *, budget: int, window: int = 2048, tail: int = 2048,
                   rng: np.random.Generator) -> tuple[dict[str, Any], int]:
    """Every offline voting method over `budget` random traces run to completion: ({method: answer}, tokens)."""
    order = _order(pool, budget, rng)
    keys = [t.answer for t in order]
    out: dict[str, Any] = {"majority": leading_share(answer_weights(keys))[0]}
    for m in METRICS:
        confs = [t.confidences(window, tail)[m] for t in order]
        out[f"weighted_{m}"] = leading_share(answer_weights(keys, confs))[0]
        out[f"top10_{m}"] = leading_share(answer_weights(keys, confs, keep_top=0.10))[0]
        out[f"top90_{m}"] = leading_share(answer_weights(keys, confs, keep_top=0.90))[0]
    return out, sum(t.tokens for t in order)


__all__ = ["ReplayOutcome", "ReplayTrace", "replay_offline", "replay_online"]
