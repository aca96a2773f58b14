"""What a reward reads: one completion, its gold answer, the question, the trajectory, and free extras.

Every reward of `train.rewards` is a plain function `fn(inp: RewardInput, **options) -> float`; the
adapters (`train.rewards.adapters`) turn one into a TRL reward function or a verl `compute_score`.
Correctness always comes from `agentic_infer.verify` (never redefined here).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory
from agentic_infer.verify import Gold


@dataclass
class RewardInput:
    """One completion to score. `trajectory` is the token-exact record when the rollout produced one."""

    completion: str
    gold: Gold | None = None
    question: str | None = None
    trajectory: Trajectory | None = None
    extra: dict[str, Any] = field(default_factory=dict)


Reward = Callable[..., float]


def as_trajectory(value: Any) -> Trajectory | None:
    """A Trajectory from a Trajectory, its dict, or its JSON string; None stays None."""
    if value is None or isinstance(value, Trajectory):
        return value
    if isinstance(value, str):
        value = json.loads(value)
    if isinstance(value, Mapping):
        return Trajectory.from_dict(dict(value))
    raise ConfigError(f"trajectory: got a {type(value).__name__}; pass a Trajectory, its to_dict() or to_json()")


def require_gold(inp: RewardInput, reward: str) -> Gold:
    if inp.gold is None:
        raise ConfigError(f"{reward}: no gold answer; pass the dataset column (gold / answer / ground_truth)")
    return inp.gold


__all__ = ["Reward", "RewardInput", "as_trajectory", "require_gold"]
