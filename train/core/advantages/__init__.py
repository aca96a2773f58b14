"""Advantage estimators, one family per file: `grpo` (GRPO, Dr. GRPO, batch std, RLOO), `gigpo`,
`arpo` (shared-prefix attribution), `aepo` (entropy-aware scaling)."""

from train.core.advantages.aepo import entropy_aware_advantages, standardise
from train.core.advantages.arpo import arpo_token_advantages, attribute, shared_prefix_lengths
from train.core.advantages.gigpo import (
    GiGPOResult,
    anchor_groups,
    discounted_returns,
    gigpo_advantages,
    gigpo_token_advantages,
)
from train.core.advantages.grpo import broadcast, grpo_advantages, rloo_advantages, zero_std_share

__all__ = ["GiGPOResult", "anchor_groups", "arpo_token_advantages", "attribute", "broadcast", "discounted_returns",
           "entropy_aware_advantages", "gigpo_advantages", "gigpo_token_advantages", "grpo_advantages",
           "rloo_advantages", "shared_prefix_lengths", "standardise", "zero_std_share"]
