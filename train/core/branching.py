"""Rollout strategies as pure, seeded decision functions: ARPO entropy-triggered branching and AEPO's
dynamic budget with the consecutive-branch penalty. The rollout loop calls these; they hold no state.

ARPO (after each tool result):
    h0 = window_entropy(first_turn_entropies)               # the initial entropy H_initial
    h = window_entropy(seg.entropies())                      # first k=20 tokens after the tool result
    n = arpo_branches(h, h0, budget=budget, config=ARPOConfig(), rng=random.Random(seed))

P_t = α + β·ΔH with ΔH = H_now − H_initial (β = 0.2); the step branches when P_t > τ (τ = 0.5) into
`branch_factor` (Z) partial rollouts, capped by what is left of the budget. Budget: `per_prompt` (M = 16)
trajectories per prompt, of which `initial` (N = 8) are sampled globally, leaving M − N for branches
(`Budget`). `stochastic=True` also draws u ~ U(0,1) from the given rng and branches only when u < P_t
(the branching "probability" read literally); the default is ARPO's threshold rule.
Entropies are Shannon entropies of the top-k renormalised distribution (`Segment.entropies()`);
`normalise=True` divides by log k (k = the number of alternatives), giving values in [0, 1].

AEPO:
    m = aepo_global_samples(h_root, h_tool_mean, total=k, beta=1.0)   # m = k·σ(β·(H_root − H̄_tool))
    p = aepo_branch_probability(h, h0, consecutive=l, config=AEPOConfig())
High root uncertainty (vs the tool steps) spends more of the budget on global samples, high tool-step
uncertainty more on branches. The consecutive-branch penalty multiplies the branching probability by
(1 − penalty)^l after l consecutive branching steps of the same chain (our reading of AEPO's penalty; the
paper's exact constant is a setting). Not covered: running the branches (the agent loop).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from agentic_infer.errors import ConfigError


def window_entropy(entropies: Sequence[float] | None, *, k: int = 20, top_k: int | None = None) -> float:
    """Mean entropy of the first `k` tokens (0.0 for none); divided by log(top_k) when `top_k` is given."""
    if k < 1:
        raise ConfigError(f"k={k!r}: must be >= 1 (ARPO uses the first 20 tokens)")
    vals = list(entropies or ())[:k]
    h = sum(vals) / len(vals) if vals else 0.0
    if top_k is not None:
        if top_k < 2:
            raise ConfigError(f"top_k={top_k!r}: normalising needs >= 2 alternatives per token")
        h /= math.log(top_k)
    return h


@dataclass(frozen=True)
class BranchRule:
    """P_t = α + β·ΔH; branch `branch_factor` (Z) partial rollouts when P_t > τ."""

    alpha: float = 0.5
    beta: float = 0.2
    tau: float = 0.5
    branch_factor: int = 2

    def __post_init__(self) -> None:
        if self.branch_factor < 1:
            raise ConfigError(f"{type(self).__name__}.branch_factor={self.branch_factor!r}: must be >= 1")


@dataclass(frozen=True)
class ARPOConfig(BranchRule):
    per_prompt: int = 16
    initial: int = 8
    stochastic: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 1 <= self.initial <= self.per_prompt:
            raise ConfigError(f"ARPOConfig.initial={self.initial!r}: must be in 1..per_prompt ({self.per_prompt})")


@dataclass(frozen=True)
class Budget:
    """What one prompt has spent: `used` trajectories so far (the initial samples count)."""

    per_prompt: int
    used: int

    @property
    def left(self) -> int:
        return max(0, self.per_prompt - self.used)

    def spend(self, n: int) -> Budget:
        return Budget(self.per_prompt, self.used + n)


def branch_probability(h_now: float, h_initial: float, *, alpha: float, beta: float) -> float:
    """P_t = α + β·(H_now − H_initial)."""
    return alpha + beta * (h_now - h_initial)


def arpo_branches(h_now: float, h_initial: float, *, budget: Budget, config: ARPOConfig = ARPOConfig(),
                  rng: random.Random | None = None) -> int:
    """How many partial rollouts to branch at this step: Z when P_t > τ (and, if stochastic, u < P_t),
    capped by `budget.left`; else 0."""
    p = branch_probability(h_now, h_initial, alpha=config.alpha, beta=config.beta)
    if p <= config.tau or budget.left == 0:
        return 0
    if config.stochastic:
        if rng is None:
            raise ConfigError("ARPOConfig.stochastic=True needs rng=random.Random(seed)")
        if rng.random() >= p:
            return 0
    return min(config.branch_factor, budget.left)


def aepo_global_samples(h_root: float, h_tool_mean: float, *, total: int, beta: float = 1.0) -> int:
    """m = round(k·σ(β·(H_root − H̄_tool))), at least 1 and at most k; the other k − m go to branches."""
    if total < 1:
        raise ConfigError(f"total={total!r}: the rollout budget must be >= 1")
    m = total / (1 + math.exp(-beta * (h_root - h_tool_mean)))
    return int(min(total, max(1, round(m))))


@dataclass(frozen=True)
class AEPOConfig(BranchRule):
    penalty: float = 0.5

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.penalty <= 1:
            raise ConfigError(f"AEPOConfig.penalty={self.penalty!r}: must be in [0, 1]")


def aepo_branch_probability(h_now: float, h_initial: float, *, consecutive: int,
                            config: AEPOConfig = AEPOConfig()) -> float:
    """(α + β·ΔH)·(1 − penalty)^consecutive: the ARPO probability lowered after repeated branching."""
    if consecutive < 0:
        raise ConfigError(f"consecutive={consecutive!r}: the count of consecutive branching steps is >= 0")
    p = branch_probability(h_now, h_initial, alpha=config.alpha, beta=config.beta)
    return p * (1 - config.penalty) ** consecutive


def aepo_branches(h_now: float, h_initial: float, *, consecutive: int, branches_left: int,
                  config: AEPOConfig = AEPOConfig(), rng: random.Random) -> int:
    """Branch `branch_factor` (capped by `branches_left`) when the penalised P_t > τ and u < P_t (seeded)."""
    p = aepo_branch_probability(h_now, h_initial, consecutive=consecutive, config=config)
    if branches_left <= 0 or p <= config.tau or rng.random() >= p:
        return 0
    return min(config.branch_factor, branches_left)


__all__ = ["AEPOConfig", "ARPOConfig", "BranchRule", "Budget", "aepo_branch_probability", "aepo_branches", "aepo_global_samples",
           "arpo_branches", "branch_probability", "window_entropy"]
