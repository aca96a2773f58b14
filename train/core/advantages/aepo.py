"""AEPO entropy-aware advantage: A·(1 + α·sg(Ĥ)), Ĥ the token entropy standardised over the batch's
trained tokens (α = 0.2).

    adv = entropy_aware_advantages(adv, entropy, loss_mask)       # (B, T) or (B,) advantages, (B, T) entropy

High-entropy tokens of a positive sample are pushed harder, low-entropy ones less (and the opposite for
a negative sample). The entropy is detached (stop-gradient), so this only rescales. Tokens outside the
mask keep a zero advantage. Not covered: computing the entropy (the policy's logits, or
`Segment.entropies()` from top-k logprobs), the clipping half of AEPO (`train.core.losses`).
"""

from __future__ import annotations

import torch

from agentic_infer.errors import ConfigError


def standardise(values: torch.Tensor, mask: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(v − mean) / (std + eps) over the masked entries (population std); 0 outside the mask."""
    m = mask.float()
    n = m.sum().clamp(min=1)
    mean = (values * m).sum() / n
    std = (((values - mean) ** 2 * m).sum() / n).sqrt()
    return (values - mean) / (std + eps) * m


def entropy_aware_advantages(advantages: torch.Tensor, entropy: torch.Tensor, mask: torch.Tensor, *,
                             alpha: float = 0.2) -> torch.Tensor:
    """A·(1 + α·sg(Ĥ)) per token (see the module docstring); (B,) advantages are broadcast over T."""
    if entropy.shape != mask.shape:
        raise ConfigError(f"entropy {tuple(entropy.shape)} and mask {tuple(mask.shape)} must have one shape (B, T)")
    a = advantages[:, None].expand_as(entropy) if advantages.dim() == 1 else advantages
    if a.shape != entropy.shape:
        raise ConfigError(f"advantages {tuple(advantages.shape)}: pass (B,) or (B, T) matching {tuple(entropy.shape)}")
    h = standardise(entropy.detach(), mask)
    return a * (1 + alpha * h) * mask.float()


__all__ = ["entropy_aware_advantages", "standardise"]
