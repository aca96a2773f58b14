"""Group-relative outcome advantages: GRPO (group std), Dr. GRPO (no std), batch std, and RLOO.

    grpo_advantages([1, 0, 1, 1], group_ids=["a", "a", "b", "b"])            # GRPO
    grpo_advantages(r, group_ids=g, scale="none")                            # Dr. GRPO
    rloo_advantages(r, group_ids=g)                                          # leave-one-out baseline

GRPO: A_i = (r_i − mean_group) / (std_group + eps); Dr. GRPO drops the division; "batch" divides by the
std of the whole batch (TRL's `scale_rewards="batch"`). The std is the unbiased one (as TRL); a group
of one has advantage 0. RLOO: A_i = r_i − mean_{j≠i} r_j. Groups are given by `group_ids` (any hashable
per sample, e.g. `Trajectory.group_id`) or by `group_size` (consecutive blocks). One scalar per
sample; `broadcast` spreads them over tokens. Not covered: per-token estimators (`gigpo`, `arpo`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import torch

from agentic_infer.errors import ConfigError

Scale = Literal["group", "batch", "none"]
SCALES = ("group", "batch", "none")


def as_tensor(values: Sequence[float] | torch.Tensor, name: str = "rewards") -> torch.Tensor:
    """A 1-D float tensor of `values` (finite), or a ConfigError naming `name`."""
    t = torch.as_tensor(values, dtype=torch.float32).detach().clone()
    if t.dim() != 1:
        raise ConfigError(f"{name}: expected one value per sample (1-D), got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ConfigError(f"{name}={t.tolist()}: every value must be finite; fix the reward function")
    return t


def group_index(n: int, group_ids: Sequence[Hashable] | None = None, group_size: int | None = None) -> torch.Tensor:
    """A (n,) long tensor of dense group numbers from `group_ids` or consecutive blocks of `group_size`."""
    if (group_ids is None) == (group_size is None):
        raise ConfigError("pass exactly one of group_ids (one per sample) or group_size")
    if group_ids is not None:
        if len(group_ids) != n:
            raise ConfigError(f"group_ids has {len(group_ids)} entries for {n} samples; pass one per sample")
        seen: dict[Hashable, int] = {}
        return torch.tensor([seen.setdefault(g, len(seen)) for g in group_ids], dtype=torch.long)
    if not isinstance(group_size, int) or group_size < 1 or n % group_size:
        raise ConfigError(f"group_size={group_size!r}: must be an integer >= 1 dividing the {n} samples")
    return torch.arange(n) // group_size


def group_stats(values: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per-sample (mean, unbiased std, size) of each sample's group (std 0 for a group of one)."""
    k = int(index.max()) + 1 if len(index) else 0
    size = torch.zeros(k).index_add_(0, index, torch.ones_like(values))
    mean = torch.zeros(k).index_add_(0, index, values) / size
    sq = torch.zeros(k).index_add_(0, index, (values - mean[index]) ** 2)
    std = torch.where(size > 1, (sq / (size - 1).clamp(min=1)).sqrt(), torch.zeros_like(sq))
    return mean[index], std[index], size[index]


def grpo_advantages(rewards: Sequence[float] | torch.Tensor, *, group_ids: Sequence[Hashable] | None = None,
                    group_size: int | None = None, scale: Scale = "group", eps: float = 1e-4) -> torch.Tensor:
    """(r − group mean) / (std + eps); `scale`: "group" (GRPO), "batch" (the batch's std), "none" (Dr. GRPO)."""
    if scale not in SCALES:
        raise ConfigError(f"scale={scale!r}: must be one of {SCALES} ('none' is Dr. GRPO)")
    r = as_tensor(rewards)
    mean, std, _ = group_stats(r, group_index(len(r), group_ids, group_size))
    adv = r - mean
    if scale == "group":
        adv = adv / (std + eps)
    elif scale == "batch":
        adv = adv / ((r.std() if len(r) > 1 else torch.tensor(0.0)) + eps)
    return adv


def rloo_advantages(rewards: Sequence[float] | torch.Tensor, *, group_ids: Sequence[Hashable] | None = None,
                    group_size: int | None = None) -> torch.Tensor:
    """REINFORCE leave-one-out: r_i − mean of the other samples of its group (0 for a group of one)."""
    r = as_tensor(rewards)
    index = group_index(len(r), group_ids, group_size)
    mean, _, size = group_stats(r, index)
    others = (mean * size - r) / (size - 1).clamp(min=1)
    return torch.where(size > 1, r - others, torch.zeros_like(r))


def zero_std_share(rewards: Sequence[float] | torch.Tensor, *, group_ids: Sequence[Hashable] | None = None,
                   group_size: int | None = None) -> float:
    """The share of groups whose rewards are all equal (they carry no GRPO signal; DAPO filters them)."""
    r = as_tensor(rewards)
    index = group_index(len(r), group_ids, group_size)
    _, std, _ = group_stats(r, index)
    if not len(index):
        return 0.0
    return float((group_max(std, index) == 0).float().mean())


def group_max(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """(groups,) maximum of `values` within each group."""
    k = int(index.max()) + 1
    return torch.zeros(k).scatter_reduce(0, index, values, "amax", include_self=False)


def broadcast(advantages: Sequence[float] | torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(B,) advantages spread over a (B, T) mask (zero where the mask is zero)."""
    a = torch.as_tensor(advantages, dtype=torch.float32)
    if a.shape != mask.shape[:1]:
        raise ConfigError(f"broadcast: {tuple(a.shape)} advantages for a mask of shape {tuple(mask.shape)}")
    return a[:, None] * mask.float()


__all__ = ["SCALES", "Scale", "as_tensor", "broadcast", "group_index", "group_max", "group_stats", "grpo_advantages",
           "rloo_advantages", "zero_std_share"]
