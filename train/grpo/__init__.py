"""GRPO-family RL on TRL 1.16 with our engines' multi-turn rollouts (see `rollout`, `trainer`, `run`)."""

from train.grpo.config import GRPOSettings
from train.grpo.rollout import PolicyLLM, RolloutFunc, make_rollout_func
from train.grpo.trainer import AgenticGRPOTrainer, Estimator

__all__ = ["AgenticGRPOTrainer", "Estimator", "GRPOSettings", "PolicyLLM", "RolloutFunc", "make_rollout_func"]
