"""Staged and scheduled rewards: R1-Searcher's two stages, Atom-Searcher's process-plus-outcome schedule,
Planner-R1's staged reward.

R1-Searcher. Stage 1 teaches retrieval: R = R_retrieval (0.5 when at least one query was issued) +
R_format (0.5 when well formed, else 0). Stage 2 teaches answering: R = R_format (0 when well formed,
−2 when not) + R_answer (F1 of the answer). `r1_searcher_stage(step, switch_step)` picks the stage.

Atom-Searcher. R = λ(t)·R_process + (1 − λ(t))·R_outcome, where R_process is the Atomic Thought
Reward (`train.rewards.atomic`: a reasoning reward model's scores of the atomic thoughts) and λ decays from
`start` toward `end` over training (linear or cosine): process guidance early, the outcome later.

Planner-R1. r = Σ λ_k r_k over schema validity, commonsense and hard micro (pass rates) and macro (all passed)
terms and the final pass: a sum, not a chain (stage 1 every λ = 1, stage 2 the macro terms and the final pass,
stage 3 the final pass only). `planner_r1_reward(terms, stage=...)` is the TravelPlanner env's own
(agentic_infer.envs.travelplanner.reward), re-exported so a reward and the env's verdict never disagree;
build `terms` with `reward_terms(verdict.checks)` or `RewardTerms(...)`.

"""

from __future__ import annotations

import math
from typing import Literal

from agentic_infer.envs.travelplanner.reward import RewardTerms, planner_r1_reward, reward_terms
from agentic_infer.errors import ConfigError
from train.rewards.base import RewardInput
from train.rewards.format import r1_searcher_format
from train.rewards.outcome import f1_reward
from train.rewards.tool_use import tool_counts

_QUERY = "<|begin_of_query|>"


def r1_searcher_stage(step: int, switch_step: int) -> int:
    """1 before `switch_step` training steps, 2 from then on."""
    if step < 0 or switch_step < 0:
        raise ConfigError(f"step={step!r}, switch_step={switch_step!r}: both must be >= 0")
    return 1 if step < switch_step else 2


def r1_searcher_reward(inp: RewardInput, *, stage: int) -> float:
    """Stage 1: 0.5·[queried] + 0.5·[format]; stage 2: (0 or −2 for format) + F1 of the <answer>."""
    ok = r1_searcher_format(inp) == 1.0
    if stage == 1:
        queried = tool_counts(inp.trajectory)[0] > 0 if inp.trajectory is not None else _QUERY in inp.completion
        return 0.5 * queried + 0.5 * ok
    if stage == 2:
        return (0.0 if ok else -2.0) + f1_reward(inp, answer_format="answer_tag")
    raise ConfigError(f"stage={stage!r}: R1-Searcher has stages 1 (retrieval + format) and 2 (format + answer F1)")


def process_weight(step: int, total_steps: int, *, start: float = 0.5, end: float = 0.0,
                   decay: Literal["linear", "cosine"] = "linear") -> float:
    """λ(t): `start` at step 0 to `end` at `total_steps` (held after), linearly or on a half cosine."""
    if total_steps <= 0 or step < 0:
        raise ConfigError(f"step={step!r}, total_steps={total_steps!r}: need step >= 0 and total_steps > 0")
    x = min(step / total_steps, 1.0)
    if decay == "linear":
        f = 1 - x
    elif decay == "cosine":
        f = 0.5 * (1 + math.cos(math.pi * x))
    else:
        raise ConfigError(f"decay={decay!r}: must be 'linear' or 'cosine'")
    return end + (start - end) * f


def atom_searcher_reward(outcome: float, process: float, *, step: int, total_steps: int, start: float = 0.5,
                         end: float = 0.0, decay: Literal["linear", "cosine"] = "linear") -> float:
    """λ(t)·process + (1 − λ(t))·outcome."""
    lam = process_weight(step, total_steps, start=start, end=end, decay=decay)
    return lam * process + (1 - lam) * outcome


__all__ = ["RewardTerms", "atom_searcher_reward", "planner_r1_reward",
           "process_weight", "r1_searcher_reward", "r1_searcher_stage", "reward_terms"]
