"""The env reward: the verdict an environment gave the episode (`agentic_infer.envs`), read from the trajectory.

    env_reward(RewardInput(text, trajectory=traj))          # traj.rewards["env_reward"], written by the env agent
    trl_reward(env_reward, name="env")                      # what `agentic train grpo` with `env: NAME` trains on

The env agent (`agentic_infer.engines.env_agent`) ends every episode with `env.verify(...)` and writes the
verdict's reward under `env_reward` and its success under `success` (`key="success"` rewards full
success only). Nothing is re-scored here: the env is the one definition of correctness. Per-step rewards
(`Step.reward`, the env's call records) are not part of this scalar; GiGPO reads them from the steps.
Not covered: a verdict recomputed from text (an env's verdict needs its state, which only the episode had).
"""

from __future__ import annotations

from agentic_infer.errors import ConfigError
from train.rewards.base import RewardInput

ENV_KEYS = ("env_reward", "success")


def env_reward(inp: RewardInput, *, key: str = "env_reward") -> float:
    """The env verdict `key` recorded in the input's trajectory; a ConfigError when there is none."""
    if key not in ENV_KEYS:
        raise ConfigError(f"env_reward key={key!r}: choose one of {ENV_KEYS}")
    traj = inp.trajectory
    if traj is None or key not in traj.rewards:
        have = "no trajectory" if traj is None else f"rewards {sorted(traj.rewards)}"
        raise ConfigError(f"env_reward: the completion carries no env verdict {key!r} ({have}); the env agent "
                          "writes it: train with env: NAME (engine env) and our rollout_func")
    return float(traj.rewards[key])


__all__ = ["ENV_KEYS", "env_reward"]
