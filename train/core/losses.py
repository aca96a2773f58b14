"""Token-level PPO-clip policy loss with masks, its aggregation modes, and AEPO entropy-balanced clipping.

    loss, stats = policy_loss(logp, old_logp, adv, loss_mask, eps_low=0.2, eps_high=0.28,
                              aggregation="token-mean", entropy_balanced=True)

Per token: r = exp(logp − old_logp), L = −min(r·A, clip(r, 1−ε_low, 1+ε_high)·A).
Aggregation (verl's names): "token-mean" (Σ L·m / Σ m over the batch: DAPO), "seq-mean-token-mean"
(each sequence's token mean, then the mean over sequences: GRPO), "seq-mean-token-sum-norm"
(Σ L·m / (B·constant), Dr. GRPO's constant normaliser; `constant` defaults to T, the padded length,
and should be the generation budget `max_completion_length`).

AEPO entropy-balanced clipping (`entropy_balanced=True`): where the upper clip bound is active
(r > 1+ε_high with A > 0), the constant 1+ε_high is replaced by (1+ε_high)·r/sg(r): the same value, but
the token keeps a gradient (1+ε_high)·A·∇log π instead of none, so high-entropy exploratory tokens are not
silenced. The lower bound is unchanged. Not covered: KL and entropy bonuses, importance-sampling
corrections for off-policy generation (the trainer's).
"""

from __future__ import annotations

from typing import Literal

import torch

from agentic_infer.errors import ConfigError

Aggregation = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"]
AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def aggregate(loss: torch.Tensor, mask: torch.Tensor, mode: Aggregation = "token-mean", *,
              constant: float | None = None) -> torch.Tensor:
    """Reduce a (B, T) per-token loss under `mask` to a scalar by `mode` (see the module docstring).

    A batch (or, for seq-mean, a sequence) without trained tokens contributes 0, never NaN."""
    if loss.shape != mask.shape or loss.dim() != 2:
        raise ConfigError(f"aggregate: loss {tuple(loss.shape)} and mask {tuple(mask.shape)} must both be (B, T)")
    m = mask.to(loss.dtype)
    if mode == "token-mean":
        return (loss * m).sum() / m.sum().clamp(min=1)
    if mode == "seq-mean-token-mean":
        per_seq = (loss * m).sum(-1) / m.sum(-1).clamp(min=1)
        has = (m.sum(-1) > 0).to(loss.dtype)
        return (per_seq * has).sum() / has.sum().clamp(min=1)
    if mode == "seq-mean-token-sum-norm":
        c = float(loss.shape[1] if constant is None else constant)
        if c <= 0:
            raise ConfigError(f"constant={constant!r}: must be > 0 (the generation budget, max_completion_length)")
        return (loss * m).sum() / (loss.shape[0] * c)
    raise ConfigError(f"aggregation={mode!r}: must be one of {AGGREGATIONS}")


def clipped_ratio(ratio: torch.Tensor, advantages: torch.Tensor, *, eps_low: float, eps_high: float,
                  entropy_balanced: bool = False) -> torch.Tensor:
    """clip(r, 1−ε_low, 1+ε_high), with AEPO's (1+ε_high)·r/sg(r) where the upper bound binds and A > 0."""
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high)
    if not entropy_balanced:
        return clipped
    upper = (1 + eps_high) * ratio / ratio.detach()
    return torch.where((ratio > 1 + eps_high) & (advantages > 0), upper, clipped)


def policy_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
                eps_low: float = 0.2, eps_high: float | None = None, aggregation: Aggregation = "token-mean",
                constant: float | None = None, entropy_balanced: bool = False) -> tuple[torch.Tensor, dict[str, float]]:
    """Token-level PPO-clip loss (to minimise) and stats (`clip_frac`, `ratio_mean`, `ratio_max`).

    `logp` (B, T) carries the gradient; `old_logp` (B, T) is the behaviour policy's (detached);
    `advantages` is (B,) or (B, T); `mask` (B, T) is 1 on trained tokens (attention and env mask).
    `eps_high` defaults to `eps_low` (DAPO's clip-higher sets it larger)."""
    eps_high = eps_low if eps_high is None else eps_high
    if eps_low < 0 or eps_high < 0:
        raise ConfigError(f"eps_low={eps_low!r}, eps_high={eps_high!r}: clip ranges must be >= 0")
    if logp.shape != old_logp.shape or logp.shape != mask.shape:
        raise ConfigError(f"logp {tuple(logp.shape)}, old_logp {tuple(old_logp.shape)} and mask {tuple(mask.shape)} "
                          "must have one shape (B, T)")
    adv = advantages[:, None].expand_as(logp) if advantages.dim() == 1 else advantages
    if adv.shape != logp.shape:
        raise ConfigError(f"advantages {tuple(advantages.shape)}: pass (B,) or (B, T) matching {tuple(logp.shape)}")
    adv = adv.detach()
    ratio = torch.exp(logp - old_logp.detach())
    surr1 = ratio * adv
    surr2 = clipped_ratio(ratio, adv, eps_low=eps_low, eps_high=eps_high, entropy_balanced=entropy_balanced) * adv
    per_token = -torch.min(surr1, surr2)
    loss = aggregate(per_token, mask, aggregation, constant=constant)
    m = mask.bool()
    with torch.no_grad():
        clipped = ((ratio < 1 - eps_low) & (adv < 0)) | ((ratio > 1 + eps_high) & (adv > 0))
        n = max(int(m.sum()), 1)
        stats = {"clip_frac": float((clipped & m).sum()) / n,
                 "ratio_mean": float((ratio * m).sum()) / n,
                 "ratio_max": float(ratio[m].max()) if m.any() else 0.0}
    return loss, stats


__all__ = ["AGGREGATIONS", "Aggregation", "aggregate", "clipped_ratio", "policy_loss"]
