r"""Tool-use rewards: ToRL's code reward, OTC's tool productivity and OTC-PPO's tool-efficiency reward,
ARTIST's tool success ratio.

    torl_reward(RewardInput(r"... \boxed{4}", gold="4", trajectory=traj))   # +1 correct, −1 wrong, −0.5 if code failed
    otc_ppo_reward(correct=True, tool_calls=2, c=4)                       # cos(2π / (2·2 + 4)) ≈ 0.707
    artist_tool_success(traj)                                            # successful calls / calls
    tool_call_bonus(RewardInput(text, trajectory=traj), bonus=0.1)       # +0.1 when the episode called a tool

ToRL: +1 for a correct final answer, −1 otherwise; with `exec_penalty` (−0.5, ToRL's code-executability
variant) added when any code call of the trajectory failed. OTC: tool productivity = correct answers /
tool calls (per trajectory: 1/m when correct, 0 when wrong; 1 with no call needed). OTC-PPO:
r_tool = cos(m·π / (2m + c)) for m tool calls and a smoothing constant c, multiplying the correctness
reward, so only correct answers earn it (r = α·r_tool·correct). ARTIST: the share of tool calls that ran
without error (0 when none was made). Tool calls and failures come from the trajectory's `steps`
(`Step.error`) or, without steps, from `usage.tool_calls` / `usage.tool_errors`. Correctness comes from
`verify` (`train.rewards.outcome`). Not covered: OTC-GRPO's per-question optimal-call estimate.
"""

from __future__ import annotations

import math

from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory
from train.rewards.base import RewardInput
from train.rewards.outcome import metric_reward


def tool_counts(traj: Trajectory | None) -> tuple[int, int]:
    """(tool calls, failed calls) of a trajectory: from its steps when it has any, else from its usage."""
    if traj is None:
        return 0, 0
    if traj.steps:
        return len(traj.steps), sum(1 for s in traj.steps if s.error)
    return traj.usage.tool_calls, traj.usage.tool_errors


def torl_reward(inp: RewardInput, *, metric: str = "math_equal", answer_format: str | None = "boxed",
                exec_penalty: float | None = -0.5) -> float:
    """+1 correct / −1 wrong, plus `exec_penalty` when a tool call failed (None: no penalty)."""
    reward = 1.0 if metric_reward(inp, metric=metric, answer_format=answer_format) >= 1.0 else -1.0
    if exec_penalty is not None and tool_counts(inp.trajectory)[1] > 0:
        reward += exec_penalty
    return reward


def otc_productivity(correct: float, tool_calls: int) -> float:
    """OTC's tool productivity: correct / tool calls (correct itself when no call was made)."""
    if tool_calls < 0:
        raise ConfigError(f"tool_calls={tool_calls!r}: must be >= 0")
    return float(correct) / max(tool_calls, 1)


def otc_ppo_reward(correct: bool | float, tool_calls: int, *, c: float = 1.0, alpha: float = 1.0) -> float:
    """α·cos(m·π/(2m + c))·correct: 1 with no call, falling toward 0 as calls grow; 0 when wrong."""
    if tool_calls < 0 or c <= 0:
        raise ConfigError(f"tool_calls={tool_calls!r}, c={c!r}: need tool_calls >= 0 and c > 0")
    return alpha * math.cos(tool_calls * math.pi / (2 * tool_calls + c)) * float(correct)


def otc_reward(inp: RewardInput, *, metric: str = "em", answer_format: str | None = "answer_tag",
               c: float = 1.0, alpha: float = 1.0) -> float:
    """OTC-PPO on one completion: correctness from `metric`, m from the trajectory's tool calls."""
    correct = metric_reward(inp, metric=metric, answer_format=answer_format) >= 1.0
    return otc_ppo_reward(correct, tool_counts(inp.trajectory)[0], c=c, alpha=alpha)


def artist_tool_success(traj: Trajectory | None) -> float:
    """ARTIST's tool execution reward: successful calls / calls (0.0 without calls)."""
    calls, failed = tool_counts(traj)
    return (calls - failed) / calls if calls else 0.0


def artist_tool_reward(inp: RewardInput) -> float:
    """`artist_tool_success` of the completion's trajectory."""
    return artist_tool_success(inp.trajectory)


def tool_call_bonus(inp: RewardInput, *, bonus: float = 0.1) -> float:
    """`bonus` when the episode made at least one tool call, else 0 (a shaping term added to the outcome reward)."""
    calls = tool_counts(inp.trajectory)[0] if inp.trajectory is not None else 0
    return bonus if calls > 0 else 0.0


__all__ = ["artist_tool_reward", "artist_tool_success", "otc_ppo_reward", "otc_productivity", "otc_reward",
           "tool_call_bonus", "tool_counts", "torl_reward"]
