"""GiGPO: group-in-group advantages, episode level plus step level over anchor-state groups.

    res = gigpo_advantages(episode_rewards=[1, 0], step_rewards=[[0, 1], [0, 0]],
                           states=[["s0", "s1"], ["s0", "s2"]])
    res.combined            # per trajectory, per step: A^E_i + omega * A^S_{i,t}
    token_advantages = gigpo_token_advantages(rollout, reward_key="em")   # per completion token

A^E compares the trajectories of one task (episode rewards). Steps of those trajectories that start
from the same environment state (the anchor: `Step.state`, the state's text; equal, or, with
`similarity_threshold`, similar by `difflib.SequenceMatcher` ratio ≥ threshold, GiGPO's 0.95) form
step groups, and A^S compares their discounted returns R_t = r_t + γ·R_{t+1} (γ = 0.95). A step with no
state, or alone in its group, has A^S = 0. Combined: A = A^E + ω·A^S (ω = 1).

As verl-agent's reference (`gigpo/core_gigpo.py`), which is the default here:
- `scale="none"` (its `mode="mean_norm"`): both levels subtract the group mean and do not divide by the
  std; `scale="group"` (`"mean_std_norm"`) divides by the unbiased group std + eps (eps = 1e-6).
- The episode mean is taken across steps (`episode_mean="steps"`, its `compute_mean_std_cross_steps`):
  verl-agent trains one row per turn, each carrying its episode's reward, so a trajectory weighs in the
  group's mean (and std) by its number of turns (`turns`; default: its steps, at least 1).
  `episode_mean="trajectories"` weighs every trajectory once (the paper's Eq. 3).
- A group with a single row keeps its raw score at the episode level (mean 0, std 1); a step group of
  one has A^S = 0 (its own mean).

Tokens: `gigpo_token_advantages` gives each model token of a step's action segment (`Step.segment`) its
step's combined advantage; model tokens no step points to (the final answer turn) get A^E alone (an
implicit step without an anchor, counted as a turn); observation tokens get 0 (they are masked anyway).
Step rewards come from `Step.reward` (None = 0); with `outcome_on_last_step` (the default) the trajectory's
outcome reward is its total: what the steps did not already pay (outcome - Σ step rewards) joins the last step
(`with_outcome`). A sparse env (search, retail: step rewards 0) gets the whole outcome on its last step, as the
usual sparse setting; a game that pays its goal step (FrozenLake's 1.0, whose verdict is also 1.0) is not paid
twice. Not covered: cross-task grouping
(anchors are only compared within one Rollout, i.e. one task).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

import torch

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Trajectory
from train.core.advantages.grpo import Scale, grpo_advantages
from train.core.masks import CompletionView, completion_view

GIGPO_SCALES = ("none", "group")  # verl-agent's mode: mean_norm | mean_std_norm
EPISODE_MEANS = ("steps", "trajectories")


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


def anchor_counts(states: Sequence[Sequence[Hashable | None]], *,
                  similarity_threshold: float | None = None) -> tuple[int, int]:
    """(steps in an anchor group of two or more, steps) over one task's trajectories: the steps GiGPO's step
    advantage can be non-zero for, and all of them."""
    flat = [s for ss in states for s in ss]
    groups = anchor_groups(flat, similarity_threshold=similarity_threshold)
    sizes: dict[int, int] = {}
    for g in groups:
        sizes[g] = sizes.get(g, 0) + 1
    return sum(sizes[g] >= 2 for g in groups), len(groups)


@dataclass
class GiGPOResult:
    """Per trajectory `episode` (A^E); per trajectory and step `returns`, `step` (A^S), `groups`
    (anchor group numbers) and `combined` (A^E + ω·A^S)."""

    episode: list[float]
    returns: list[list[float]]
    step: list[list[float]]
    groups: list[list[int]]
    combined: list[list[float]]


def episode_advantages(rewards: Sequence[float], turns: Sequence[int], *, scale: Scale = "none",
                       eps: float = 1e-6) -> list[float]:
    """A^E per trajectory: GRPO over the group's rows, trajectory i counted `turns[i]` times; a group of a
    single row keeps its raw score (mean 0, std 1; see the module docstring)."""
    rows = [float(r) for r, w in zip(rewards, turns) for _ in range(w)]
    if len(rows) == 1:
        return [rows[0] if scale == "none" else rows[0] / (1 + eps)]
    adv = grpo_advantages(rows, group_size=len(rows), scale=scale, eps=eps).tolist()
    first = [sum(turns[:i]) for i in range(len(turns))]  # each trajectory's first row
    return [adv[k] for k in first]


def gigpo_advantages(episode_rewards: Sequence[float], step_rewards: Sequence[Sequence[float]],
                     states: Sequence[Sequence[Hashable | None]], *, gamma: float = 0.95, omega: float = 1.0,
                     similarity_threshold: float | None = None, scale: Scale = "none",
                     episode_mean: str = "steps", turns: Sequence[int] | None = None,
                     eps: float = 1e-6) -> GiGPOResult:
    """GiGPO over the trajectories of ONE task (see the module docstring). `scale`: "none" (mean_norm, the
    reference default) or "group" (mean_std_norm), for both levels; `turns`: rows per trajectory for the
    cross-step episode mean (default: its number of steps, at least 1)."""
    n = len(episode_rewards)
    if scale not in GIGPO_SCALES:
        raise ConfigError(f"scale={scale!r}: GiGPO takes 'none' (mean_norm, the reference default) or 'group' "
                          "(mean_std_norm)")
    if episode_mean not in EPISODE_MEANS:
        raise ConfigError(f"episode_mean={episode_mean!r}: choose 'steps' (verl-agent's cross-step mean) or "
                          "'trajectories' (each trajectory once)")
    if len(step_rewards) != n or len(states) != n:
        raise ConfigError(f"gigpo_advantages: {n} episode rewards, {len(step_rewards)} step-reward lists and "
                          f"{len(states)} state lists; pass one of each per trajectory")
    for i, (r, s) in enumerate(zip(step_rewards, states)):
        if len(r) != len(s):
            raise ConfigError(f"trajectory {i}: {len(r)} step rewards for {len(s)} states; pass one per step")
    if turns is None:
        turns = [max(1, len(r)) for r in step_rewards]
    if len(turns) != n or any(not isinstance(w, int) or w < 1 for w in turns):
        raise ConfigError(f"turns={list(turns)!r}: one count >= 1 per trajectory")
    weights = turns if episode_mean == "steps" else [1] * n
    episode = episode_advantages(episode_rewards, weights, scale=scale, eps=eps) if n else []
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


def turns_of(traj: Trajectory, view: CompletionView) -> int:
    """The trajectory's model turns in `view` (its completion view): its steps, plus one when trained tokens
    lie outside every step's segment (the final answer turn); at least 1."""
    owned = {s.segment for s in traj.steps if s.segment is not None}
    extra = any(m and seg not in owned for seg, m in zip(view.segment_index, view.env_mask))
    return max(1, len(traj.steps) + int(extra))


def with_outcome(step_rewards: Sequence[float], outcome: float) -> list[float]:
    """The step rewards with the outcome as the episode's total: outcome - Σ step rewards joins the last step
    (unchanged when there is no step)."""
    rs = [float(r) for r in step_rewards]
    if rs:
        rs[-1] += float(outcome) - sum(rs)
    return rs


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
        if outcome_on_last_step:
            rs = with_outcome(rs, r)
        episode.append(r)
        steps.append(rs)
        states.append([s.state for s in t.steps])
    return episode, steps, states


def gigpo_token_advantages(rollout: Rollout, *, reward_key: str, gamma: float = 0.95, omega: float = 1.0,
                           similarity_threshold: float | None = None, scale: Scale = "none",
                           episode_mean: str = "steps", outcome_on_last_step: bool = True,
                           **view: object) -> list[list[float]]:
    """Per trajectory, one advantage per completion token of `completion_view(traj, **view)`."""
    episode, steps, states = rollout_step_rewards(rollout, reward_key=reward_key,
                                                  outcome_on_last_step=outcome_on_last_step)
    views = [completion_view(t, **view) for t in rollout.trajectories]  # type: ignore[arg-type]
    res = gigpo_advantages(episode, steps, states, gamma=gamma, omega=omega,
                           similarity_threshold=similarity_threshold, scale=scale, episode_mean=episode_mean,
                           turns=[turns_of(t, v) for t, v in zip(rollout.trajectories, views)])
    out = []
    for i, (traj, v) in enumerate(zip(rollout.trajectories, views)):
        by_segment = {s.segment: res.combined[i][j] for j, s in enumerate(traj.steps) if s.segment is not None}
        out.append([0.0 if not m else by_segment.get(seg, res.episode[i])
                    for seg, m in zip(v.segment_index, v.env_mask)])
    return out


def as_token_tensor(per_token: Sequence[Sequence[float]], length: int) -> torch.Tensor:
    """Right-pad per-token lists with zeros to a (B, length) tensor."""
    out = torch.zeros(len(per_token), length)
    for i, a in enumerate(per_token):
        out[i, :min(len(a), length)] = torch.tensor(list(a)[:length], dtype=torch.float)
    return out


__all__ = ["EPISODE_MEANS", "GIGPO_SCALES", "GiGPOResult", "anchor_counts", "anchor_groups", "as_token_tensor",
           "discounted_returns", "episode_advantages", "gigpo_advantages", "gigpo_token_advantages",
           "rollout_step_rewards", "similarity", "turns_of", "with_outcome"]
