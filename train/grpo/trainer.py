"""`AgenticGRPOTrainer`: TRL's GRPOTrainer with our advantage estimators, AEPO clipping and diagnostics.

    trainer = AgenticGRPOTrainer(model=model, reward_funcs=[...], args=GRPOConfig(...), train_dataset=ds,
                                 processing_class=tok, rollout_func=RolloutFunc(...),
                                 estimator=Estimator(name="gigpo", omega=1.0))

TRL computes rewards and its own group-normalised advantages; this subclass then replaces
`advantages` with ours, computed by `train.core.advantages` from the same rewards (summed with TRL's
`reward_weights`) and, for the token-level estimators, from the trajectories our rollout_func attached:
`grpo` (group std), `dr_grpo` (no std), `grpo_batch` (batch std), `rloo`, `gigpo` (episode + ω × step
advantage over anchor-state groups; a `(B, T)` tensor, which TRL 1.16's loss accepts), `arpo`
(shared-prefix attribution over branches: plain GRPO for unbranched groups), or `trl` (keep TRL's).
`aepo_alpha > 0` scales advantages by the policy's token entropy and `aepo_clip` uses AEPO's
entropy-balanced clipping; either switches the loss to `train.core.losses.policy_loss` (token-level
PPO-clip with the env mask; aggregation from `loss_aggregation`). Every step logs `train.core.diagnostics`
(`diag/reward_mean`, `diag/zero_std_share`, ...) and warns on RAGEN's echo trap.
Branched rollouts (`RolloutFunc(branching="arpo"|"aepo")`): each group of `num_generations` consecutive rows is
one BranchingRollout's roots and branches, so `arpo` attributes over their real `parent_id` / `branch_token`
structure (hard: shared-prefix tokens take the mean advantage of the trajectories sharing them).
Not covered: multi-process GiGPO grouping across ranks (gathered, single node tested).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from trl import GRPOTrainer

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout
from train.grpo.rollout import trajectories_of

log = logging.getLogger(__name__)

ESTIMATORS = ("trl", "grpo", "dr_grpo", "grpo_batch", "rloo", "gigpo", "arpo")


@dataclass(frozen=True)
class Estimator:
    """Which advantage estimator and loss (see the module docstring)."""

    name: str = "grpo"
    gamma: float = 0.95  # GiGPO step-return discount
    omega: float = 1.0  # GiGPO step-advantage weight
    similarity_threshold: float | None = None  # GiGPO similarity grouping (None: exact anchor hash)
    arpo_mode: str = "hard"
    aepo_alpha: float = 0.0  # entropy-aware advantage scaling (0 = off)
    aepo_clip: bool = False  # entropy-balanced clipping
    loss_aggregation: str = "token-mean"
    eps_low: float = 0.2
    eps_high: float | None = None

    def __post_init__(self) -> None:
        if self.name not in ESTIMATORS:
            raise ConfigError(f"estimator {self.name!r}: choose one of {ESTIMATORS}")
        if self.arpo_mode not in ("hard", "soft"):
            raise ConfigError(f"arpo_mode={self.arpo_mode!r}: must be 'hard' or 'soft'")

    @property
    def own_loss(self) -> bool:
        return self.aepo_clip or self.aepo_alpha > 0


def sequence_advantages(name: str, rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """(N,) advantages of the sequence-level estimators."""
    from train.core.advantages import grpo_advantages, rloo_advantages

    if name == "rloo":
        return rloo_advantages(rewards, group_size=group_size)
    scale = {"dr_grpo": "none", "grpo_batch": "batch"}.get(name, "group")
    return grpo_advantages(rewards, group_size=group_size, scale=scale)


def token_advantages(est: Estimator, rewards: torch.Tensor, trajectories: list, group_size: int,
                     view: dict[str, Any]) -> list[list[float]]:
    """Per completion token advantages (GiGPO, ARPO) for every trajectory, group by group."""
    from train.core.advantages import arpo_token_advantages, gigpo_token_advantages

    out: list[list[float]] = []
    base = sequence_advantages("grpo", rewards, group_size)
    for g in range(0, len(trajectories), group_size):
        members = trajectories[g:g + group_size]
        for t, r in zip(members, rewards[g:g + group_size].tolist()):
            t.rewards["trl_reward"] = float(r)
        group = Rollout(example_id=f"group-{g // group_size}", trajectories=members, chosen=None)
        if est.name == "gigpo":
            out += gigpo_token_advantages(group, reward_key="trl_reward", gamma=est.gamma, omega=est.omega,
                                          similarity_threshold=est.similarity_threshold, **view)
        else:
            out += arpo_token_advantages(group, base[g:g + group_size].tolist(), mode=est.arpo_mode, **view)
    return out


class AgenticGRPOTrainer(GRPOTrainer):
    """See the module docstring."""

    def __init__(self, *args: Any, estimator: Estimator | None = None, **kwargs: Any):
        self.estimator = estimator or Estimator()
        self._last_rewards: torch.Tensor | None = None
        self.diagnostics: list[dict[str, float]] = []
        super().__init__(*args, **kwargs)
        if self.estimator.name in ("gigpo", "arpo") and not hasattr(self.rollout_func, "view_kwargs"):
            raise ConfigError(f"estimator {self.estimator.name!r} needs our RolloutFunc (train.grpo.rollout)")

    # -- advantages --------------------------------------------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._last_rewards = rewards_per_func
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        out = super()._generate_and_score_completions(inputs)
        est = self.estimator
        mode = "train" if self.model.training else "eval"
        group_size = self.num_generations if mode == "train" else self.num_generations_eval
        per_func = self._last_rewards
        rewards = (per_func * self.reward_weights.to(per_func.device).unsqueeze(0)).nansum(dim=1).float().cpu()
        n_local = out["completion_ids"].size(0)
        local = slice(self.accelerator.process_index * n_local, (self.accelerator.process_index + 1) * n_local)
        if est.name in ("gigpo", "arpo"):
            from accelerate.utils import gather_object

            from train.core.advantages.gigpo import as_token_tensor

            trajs = gather_object(trajectories_of(inputs)) if self.accelerator.num_processes > 1 \
                else trajectories_of(inputs)
            per_token = token_advantages(est, rewards, trajs, group_size, self.rollout_func.view_kwargs)
            adv = as_token_tensor(per_token[local], out["completion_ids"].size(1))
        elif est.name != "trl":
            adv = sequence_advantages(est.name, rewards, group_size)[local]
        else:
            adv = out["advantages"]
        out["advantages"] = adv.to(out["completion_ids"].device)
        self._log_diagnostics(mode, rewards, group_size)
        return out

    def _log_diagnostics(self, mode: str, rewards: torch.Tensor, group_size: int) -> None:
        from train.core.diagnostics import step_stats

        stats = step_stats(rewards, group_size=group_size)
        for k, v in stats.items():
            self._metrics[mode][f"diag/{k}"].append(v)

    # -- loss (AEPO) -------------------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        est = self.estimator
        if not est.own_loss:
            return super()._compute_loss(model, inputs)
        from train.core.advantages import entropy_aware_advantages
        from train.core.losses import policy_loss

        completion_ids, completion_mask = inputs["completion_ids"], inputs["completion_mask"]
        input_ids = torch.cat([inputs["prompt_ids"], completion_ids], dim=1)
        attention_mask = torch.cat([inputs["prompt_mask"], completion_mask], dim=1)
        mask = completion_mask if "tool_mask" not in inputs else completion_mask * inputs["tool_mask"]
        logps, entropies, _ = self._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, completion_ids.size(1), compute_entropy=True)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        adv = inputs["advantages"]
        if est.aepo_alpha > 0:
            adv = entropy_aware_advantages(adv, entropies, mask, alpha=est.aepo_alpha)
        loss, stats = policy_loss(logps, old, adv, mask.float(), eps_low=est.eps_low, eps_high=est.eps_high,
                                  aggregation=est.loss_aggregation, entropy_balanced=est.aepo_clip)
        mode = "train" if self.model.training else "eval"
        for k, v in stats.items():
            self._metrics[mode][f"diag/{k}"].append(v)
        m = mask.float()
        self._metrics[mode]["entropy"].append(float((entropies.detach() * m).sum() / m.sum().clamp(min=1)))
        return loss / (getattr(self, "current_gradient_accumulation_steps", 1) if mode == "train" else 1.0)

    # -- echo trap ---------------------------------------------------------------------------------------------
    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        from train.core.diagnostics import echo_trap

        super().log(logs, start_time)
        needed = ("diag/group_reward_std", "entropy", "grad_norm")
        if all(k in logs for k in needed):
            self.diagnostics.append({"group_reward_std": logs["diag/group_reward_std"], "entropy": logs["entropy"],
                                     "grad_norm": logs["grad_norm"]})
            trap = echo_trap(self.diagnostics)
            if trap is not None:
                log.warning("%s", trap.message)
