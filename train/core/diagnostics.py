"""Training diagnostics as pure functions over per-step statistics (log them every step).

    stats = step_stats(rewards, group_ids=g, entropy=ent, mask=m, grad_norm=gn)
    history.append(stats)
    warn = echo_trap(history)                      # None, or an EchoTrap saying what moved when
    mi, acc = mutual_information_proxy(L)          # RAGEN-2, L[i, j] = log p(z_i | x_j)

`step_stats`: reward mean / std, the share of groups with zero reward std, mean token entropy over the
trained tokens, the gradient norm. `echo_trap` (RAGEN's "Echo Trap"): the within-group reward std falls
first, then the entropy falls, while the gradient norm spikes: each measured as the recent window against
the first window of the history. `mutual_information_proxy` (RAGEN-2's template-collapse check): high
entropy but low I(X; Z) means the reasoning ignores the input; Î = mean_i(L_ii − logsumexp_j L_ij + log N)
(0 for input-independent outputs, log N at most) and retrieval accuracy (share of i with argmax_j L_ij = i,
chance 1/N). Not covered: computing L (N² forward passes of the policy: the trainer's).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import torch

from agentic_infer.errors import ConfigError
from train.core.advantages.grpo import as_tensor, group_index, group_max, group_stats, zero_std_share


def step_stats(rewards: Sequence[float] | torch.Tensor, *, group_ids: Sequence[Hashable] | None = None,
               group_size: int | None = None, entropy: torch.Tensor | None = None, mask: torch.Tensor | None = None,
               grad_norm: float | None = None) -> dict[str, float]:
    """`reward_mean`, `reward_std`, `group_reward_std` (mean within-group std), `zero_std_share`, and
    `entropy` (mean over masked tokens) / `grad_norm` when given."""
    r = as_tensor(rewards)
    index = group_index(len(r), group_ids, group_size)
    _, std, _ = group_stats(r, index)
    per_group = group_max(std, index)
    out = {"reward_mean": float(r.mean()), "reward_std": float(r.std()) if len(r) > 1 else 0.0,
           "group_reward_std": float(per_group.mean()),
           "zero_std_share": zero_std_share(r, group_ids=group_ids, group_size=group_size)}
    if entropy is not None:
        m = torch.ones_like(entropy) if mask is None else mask.float()
        out["entropy"] = float((entropy * m).sum() / m.sum().clamp(min=1))
    if grad_norm is not None:
        out["grad_norm"] = float(grad_norm)
    return out


@dataclass(frozen=True)
class EchoTrap:
    """Where the collapse signs appeared: the first step at which each crossed its threshold."""

    std_step: int
    entropy_step: int
    grad_spike_step: int
    message: str


def _first_drop(values: list[float], base: float, drop: float, start: int) -> int | None:
    return next((i for i in range(start, len(values)) if values[i] <= base * (1 - drop)), None)


def echo_trap(history: Sequence[Mapping[str, float]], *, window: int = 5, drop: float = 0.5,
              spike: float = 3.0) -> EchoTrap | None:
    """RAGEN's echo-trap warning over per-step stats (`group_reward_std`, `entropy`, `grad_norm`).

    Baselines are the means of the first `window` steps. Fires when the reward std first falls by `drop`
    (a share), the entropy falls by `drop` at that step or later, and a gradient norm at or after the std
    fall exceeds `spike` × the baseline gradient norm: the order RAGEN reports."""
    if window < 1 or not 0 < drop < 1 or spike <= 1:
        raise ConfigError(f"window={window!r}, drop={drop!r}, spike={spike!r}: need window >= 1, 0 < drop < 1, "
                          "spike > 1")
    if len(history) <= window:
        return None
    try:
        std = [float(h["group_reward_std"]) for h in history]
        ent = [float(h["entropy"]) for h in history]
        gn = [float(h["grad_norm"]) for h in history]
    except KeyError as e:
        raise ConfigError(f"echo_trap: a step lacks {e}; log step_stats(..., entropy=, grad_norm=) every step") from e
    base_std, base_ent, base_gn = (sum(v[:window]) / window for v in (std, ent, gn))
    s = _first_drop(std, base_std, drop, window)
    if s is None:
        return None
    e = _first_drop(ent, base_ent, drop, s)
    g = next((i for i in range(s, len(gn)) if gn[i] >= spike * base_gn), None)
    if e is None or g is None:
        return None
    return EchoTrap(s, e, g, f"echo trap: within-group reward std fell at step {s} (from {base_std:.3g}), entropy "
                             f"fell at step {e} (from {base_ent:.3g}), gradient norm spiked at step {g} "
                             f"({gn[g]:.3g} vs {base_gn:.3g}); lower the learning rate, filter zero-std groups "
                             "or roll back")


def mutual_information_proxy(log_probs: torch.Tensor | Sequence[Sequence[float]]) -> tuple[float, float]:
    """(Î, retrieval accuracy) from the (N, N) matrix L[i, j] = log p(z_i | x_j) (RAGEN-2)."""
    L = torch.as_tensor(log_probs, dtype=torch.float64)
    if L.dim() != 2 or L.shape[0] != L.shape[1] or L.shape[0] < 1:
        raise ConfigError(f"log_probs: need a square (N, N) matrix, got shape {tuple(L.shape)}")
    n = L.shape[0]
    mi = (L.diagonal() - torch.logsumexp(L, dim=1) + math.log(n)).mean()
    acc = (L.argmax(dim=1) == torch.arange(n)).double().mean()
    return float(mi), float(acc)


__all__ = ["EchoTrap", "echo_trap", "mutual_information_proxy", "step_stats"]
