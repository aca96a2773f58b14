"""GiGPO: group-in-group advantages, episode level plus step level over anchor-state groups.

    res = gigpo_advantages(episode_rewards=[1, 0], step_rewards=[[0, 1], [0, 0]],
                           states=[["s0", "s1"], ["s0", "s2"]])
    res.combined            # per trajectory, per step: A^E_i + omega * A^S_{i,t}
    token_advantages = gigpo_token_advantages(rollout, reward_key="em")   # per completion token

A^E is GRPO over the trajectories of one task (episode rewards). Steps of those trajectories that start
from the same environment state (the anchor: `Step.state`, a hashable; equal by hash, or, with
`similarity_threshold`, similar by `difflib.SequenceMatcher` ratio ≥ threshold, GiGPO's 0.95) form
step groups, and A^S is GRPO over their discounted returns R_t = r_t + γ·R_{t+1} (γ = 0.95). A step
with no state, or alone in its group, has A^S = 0. Combined: A = A^E + ω·A^S (ω = 1).

Tokens: `gigpo_token_advantages` gives each model token of a step's action segment (`Step.segment`) its
step's combined advantage; model tokens no step points to (the final answer turn) get A^E alone (an
implicit step without an anchor); observation tokens get 0 (they are masked anyway). Step rewards come
from `Step.reward` (None = 0); the trajectory's outcome reward is added to its last step's reward when
`outcome_on_last_step` (the usual sparse setting). Not covered: cross-task grouping (anchors are only
compared within one Rollout, i.e. one task).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import torch

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout
from train.core.advantages.grpo import Scale, grpo_advantages
from train.core.masks import completion_view


def discounted_returns(rewards: Sequence[float], gamma: float = 0.95) -> list[float]:
    """R_t = r_t + γ·R_{t+1}, from the last step backwards."""
    if not 0.0 <= gamma <= 1.0:
        raise ConfigError(f"gamma={gamma!r}: must be in [0, 1] (GiGPO uses 0.95)")
    out, acc = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        acc = float(rewards[t]) + gamma * acc
        out[t] = acc
    return out


def similarity(a: Hashable, b: Hashable) -> float:
    """`difflib.SequenceMatcher` ratio of the two states' string forms (1.0 = identical)."""
    return SequenceMatcher(None, str(a), str(b)).ratio()


def anchor_groups(states: Sequence[Hashable | None], *, similarity_threshold: float | None = None,
                  similar: Callable[[Hashable, Hashable], float] = similarity) -> list[int]:
    """A group number per state: equal states share one; with `similarity_threshold`, a state joins the
    first group whose first state is at least that similar. None (no anchor) is always alone."""
    if similarity_threshold is not None and not 0.0 < similarity_threshold <= 1.0:
        raise ConfigError(f"similarity_threshold={similarity_threshold!r}: must be in (0, 1] (GiGPO uses 0.95)")
    groups: list[int] = []
    exact: dict[Hashable, int] = {}
    reps: list[Hashable | None] = []
    for s in states:
        if s is None:
            reps.append(None)
            groups.append(len(reps) - 1)
            continue
        g = exact.get(s)
        if g is None and similarity_threshold is not None:
            g = next((i for i, r in enumerate(reps) if r is not None and similar(s, r) >= similarity_threshold), None)
        if g is None:
            reps.append(s)
            g = len(reps) - 1
        exact.setdefault(s, g)
        groups.append(g)
    return groups


@dataclass
class GiGPOResult:
    """Per trajectory `episode` (A^E); per trajectory and step `returns`, `step` (A^S), `groups`
    (anchor group numbers) and `combined` (A^E + ω·A^S)."""

    episode: list[float]
    returns: list[list[float]]
    step: list[list[float]]
    groups: list[list[int]]
    combined: list[list[float]]


def gigpo_advantages(episode_rewards: Sequence[float], step_rewards: Sequence[Sequence[float]],
                     states: Sequence[Sequence[Hashable | None]], *, gamma: float = 0.95, omega: float = 1.0,
                     similarity_threshold: float | None = None, scale: Scale = "group",
                     eps: float = 1e-4) -> GiGPOResult:
    """GiGPO over the trajectories of ONE task (see the module docstring); `scale` as in GRPO for both levels."""
    n = len(episode_rewards)
    if len(step_rewards) != n or len(states) != n:
        raise ConfigError(f"gigpo_advantages: {n} episode rewards, {len(step_rewards)} step-reward lists and "
                          f"{len(states)} state lists; pass one of each per trajectory")
    for i, (r, s) in enumerate(zip(step_rewards, states)):
        if len(r) != len(s):
            raise ConfigError(f"trajectory {i}: {len(r)} step rewards for {len(s)} states; pass one per step")
    episode = grpo_advantages(episode_rewards, group_size=n, scale=scale, eps=eps).tolist() if n else []
    returns = [discounted_returns(r, gamma) for r in step_rewards]
    flat_states = [s for ss in states for s in ss]
    flat_groups = anchor_groups(flat_states, similarity_threshold=similarity_threshold)
    flat_returns = [r for rr in returns for r in rr]
    flat_step = (grpo_advantages(flat_returns, group_ids=flat_groups, scale=scale, eps=eps).tolist()
                 if flat_returns else [])
    step, groups, combined, k = [], [], [], 0
    for i, ss in enumerate(states):
        m = len(ss)
        step.append(flat_step[k:k + m])
        groups.append(flat_groups[k:k + m])
        combined.append([episode[i] + omega * a for a in flat_step[k:k + m]])
        k += m
    return GiGPOResult(episode, returns, step, groups, combined)


def rollout_step_rewards(rollout: Rollout, *, reward_key: str, outcome_on_last_step: bool = True
                         ) -> tuple[list[float], list[list[float]], list[list[Hashable | None]]]:
    """(episode rewards, step rewards, anchor states) of a Rollout's trajectories (see module docstring)."""
    episode, steps, states = [], [], []
    for t in rollout.trajectories:
        if reward_key not in t.rewards:
            raise ConfigError(f"trajectory {t.id} has no reward {reward_key!r} (it has {sorted(t.rewards)}); "
                              "score it first (verify.write_verdicts)")
        r = float(t.rewards[reward_key])
        rs = [float(s.reward or 0.0) for s in t.steps]
        if outcome_on_last_step and rs:
            rs[-1] += r
        episode.append(r)
        steps.append(rs)
        states.append([s.state for s in t.steps])
    return episode, steps, states


def gigpo_token_advantages(rollout: Rollout, *, reward_key: str, gamma: float = 0.95, omega: float = 1.0,
                           similarity_threshold: float | None = None, scale: Scale = "group",
                           outcome_on_last_step: bool = True, **view: object) -> list[list[float]]:
    """Per trajectory, one advantage per completion token of `completion_view(traj, **view)`."""
    episode, steps, states = rollout_step_rewards(rollout, reward_key=reward_key,
                                                  outcome_on_last_step=outcome_on_last_step)
    res = gigpo_advantages(episode, steps, states, gamma=gamma, omega=omega,
                           similarity_threshold=similarity_threshold, scale=scale)
    out = []
    for i, traj in enumerate(rollout.trajectories):
        by_segment = {s.segment: res.combined[i][j] for j, s in enumerate(traj.steps) if s.segment is not None}
        v = completion_view(traj, **view)  # type: ignore[arg-type]
        out.append([0.0 if not m else by_segment.get(seg, res.episode[i])
                    for seg, m in zip(v.segment_index, v.env_mask)])
    return out


def as_token_tensor(per_token: Sequence[Sequence[float]], length: int) -> torch.Tensor:
    """Right-pad per-token lists with zeros to a (B, length) tensor."""
    out = torch.zeros(len(per_token), length)
    for i, a in enumerate(per_token):
        out[i, :min(len(a), length)] = torch.tensor(list(a)[:length], dtype=torch.float)
    return out


__all__ = ["GiGPOResult", "anchor_groups", "as_token_tensor", "discounted_returns", "gigpo_advantages",
           "gigpo_token_advantages", "rollout_step_rewards", "similarity"]
