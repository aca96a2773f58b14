"""`AgenticGRPOTrainer`: TRL's GRPOTrainer with our advantage estimators, our policy loss and diagnostics.

    trainer = AgenticGRPOTrainer(model=model, reward_funcs=[...], args=GRPOConfig(...), train_dataset=ds,
                                 processing_class=tok, rollout_func=RolloutFunc(...),
                                 estimator=Estimator(name="gigpo", omega=1.0))

TRL computes rewards and its own group-normalised advantages; this subclass then replaces
`advantages` with ours, computed by `train.core.advantages` from the same rewards (summed with TRL's
`reward_weights`) and, for the token-level estimators, from the trajectories our rollout_func attached:
`grpo` (group std), `dr_grpo` (no std, and Dr. GRPO's loss: Σ L·m / (B · max_completion_length)),
`grpo_batch` (batch std), `rloo`, `gigpo` (episode + ω × step advantage over anchor-state groups, verl-agent's
mean normalisation and cross-step episode mean; a `(B, T)` tensor, which TRL 1.16's loss accepts), `arpo`
(shared-prefix attribution over branches; hard: each shared token trained once, in the earliest row that
holds it, with the mean advantage; plain GRPO for unbranched groups), or `trl` (TRL's advantages AND TRL's
loss, untouched).

The loss of every estimator but `trl` is `train.core.losses.policy_loss` (token-level PPO-clip with the env
mask), so every `Estimator` field reaches the gradient: `loss_aggregation` (default token-mean, TRL's "dapo"
normalisation by the generation batch's token count; Dr. GRPO's constant normaliser for `dr_grpo`),
`eps_low`/`eps_high` (default TRL's `epsilon`/`epsilon_high`), the dual clip `clip_ratio_c` (verl's 3),
AEPO's entropy-aware advantages (`aepo_alpha`) and entropy-balanced clipping (`aepo_clip`), and TRL's
β·KL when `beta > 0`. With the defaults it is TRL's own "dapo" loss (tested equal). TRL loss options it
does not implement (another `loss_type`, sequence-level importance sampling, top-entropy masks,
off-policy masks, entropy bonus, `delta`) are refused at construction: use `estimator.name=trl` for them.
Clipping binds only off-policy: `aepo_clip` without a reused generation batch (`num_iterations > 1`, or
`steps_per_generation` > `gradient_accumulation_steps`) is refused, since it could not change anything.
Rows without advantage (a zero-variance group's) are left out of the loss's forward and backward
(`train.grpo.trained_rows`: the same loss and gradient, at the cost of the rows that carry an advantage;
`diag/trained_rows` logs the share kept) unless β > 0, `aepo_alpha` > 0 or several processes train;
`skip_zero_advantage=False` runs every row.
Every step logs `train.core.diagnostics` (`diag/reward_mean`, `diag/zero_std_share`, ...; with branched rollouts
`diag/branch_share`, the share of the step's episodes that are branches; with the engine's trajectories
`diag/tool_call_rate` and `diag/tool_calls`, the share of episodes that called a tool and the calls per episode,
where tool-use collapse under outcome-only RL shows) and warns on
RAGEN's echo trap; every `mi_every` steps (RAGEN-2's 5; 0 = off) it logs RAGEN-2's mutual-information proxy
of the batch (`diag/mi`, `diag/mi_retrieval_acc`, `train.grpo.probes`: no gradient, at most 64 × 16 scored
sequences).
Branched rollouts (`RolloutFunc(branching="arpo"|"aepo")`): each group of `num_generations` consecutive rows is
one BranchingRollout's roots and branches, so `arpo` attributes over their real `parent_id` / `branch_token`
structure. Not covered: multi-process GiGPO grouping across ranks (gathered, single node tested).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import torch
from trl import GRPOTrainer

from agentic_infer.errors import ConfigError
from agentic_infer.types import Rollout, Trajectory
from train.grpo.rollout import trajectories_of
from train.grpo.trained_rows import PROMPT_KEYS, trained_mask, trained_rows
from train.rewards.tool_use import tool_counts

log = logging.getLogger(__name__)

ESTIMATORS = ("trl", "grpo", "dr_grpo", "grpo_batch", "rloo", "gigpo", "arpo")
DR_GRPO_AGGREGATION = "seq-mean-token-sum-norm"


@dataclass(frozen=True)
class Estimator:
    """Which advantage estimator and loss (see the module docstring)."""

    name: str = "grpo"
    gamma: float = 0.95  # GiGPO step-return discount
    omega: float = 1.0  # GiGPO step-advantage weight
    similarity_threshold: float | None = None  # GiGPO similarity grouping of anchor-state texts (None: equal)
    gigpo_scale: str = "none"  # GiGPO: "none" (verl-agent's mean_norm) | "group" (mean_std_norm)
    episode_mean: str = "steps"  # GiGPO episode mean: "steps" (verl-agent, cross-step) | "trajectories"
    arpo_mode: str = "hard"
    aepo_alpha: float = 0.0  # entropy-aware advantage scaling (0 = off)
    aepo_clip: bool = False  # entropy-balanced clipping (needs a reused generation batch)
    loss_aggregation: str | None = None  # None: token-mean, or seq-mean-token-sum-norm for dr_grpo
    eps_low: float | None = None  # None: TRL's epsilon
    eps_high: float | None = None  # None: TRL's epsilon_high
    clip_ratio_c: float | None = 3.0  # dual clip for negative advantages (verl's default); None = off

    def __post_init__(self) -> None:
        from train.core.advantages.gigpo import EPISODE_MEANS, GIGPO_SCALES
        from train.core.losses import AGGREGATIONS

        if self.name not in ESTIMATORS:
            raise ConfigError(f"estimator {self.name!r}: choose one of {ESTIMATORS}")
        if self.arpo_mode not in ("hard", "soft"):
            raise ConfigError(f"arpo_mode={self.arpo_mode!r}: must be 'hard' or 'soft'")
        if self.gigpo_scale not in GIGPO_SCALES:
            raise ConfigError(f"gigpo_scale={self.gigpo_scale!r}: choose one of {GIGPO_SCALES}")
        if self.episode_mean not in EPISODE_MEANS:
            raise ConfigError(f"episode_mean={self.episode_mean!r}: choose one of {EPISODE_MEANS}")
        if self.loss_aggregation is not None and self.loss_aggregation not in AGGREGATIONS:
            raise ConfigError(f"loss_aggregation={self.loss_aggregation!r}: choose one of {AGGREGATIONS}")
        if self.clip_ratio_c is not None and self.clip_ratio_c <= 1:
            raise ConfigError(f"clip_ratio_c={self.clip_ratio_c!r}: must be > 1 (verl's 3), or null for no dual clip")
        if self.name == "trl" and (self.aepo_clip or self.aepo_alpha > 0 or self.loss_aggregation is not None
                                   or self.eps_low is not None or self.eps_high is not None):
            raise ConfigError("estimator 'trl' keeps TRL's own advantages and loss; set the loss through TRL's "
                              "options (trl.loss_type, trl.epsilon) or choose another estimator for aepo_*, "
                              "loss_aggregation and eps_*")

    @property
    def aggregation(self) -> str:
        """The loss aggregation this estimator trains with."""
        if self.loss_aggregation is not None:
            return self.loss_aggregation
        return DR_GRPO_AGGREGATION if self.name == "dr_grpo" else "token-mean"


def sequence_advantages(name: str, rewards: torch.Tensor, group_size: int) -> torch.Tensor:
    """(N,) advantages of the sequence-level estimators."""
    from train.core.advantages import grpo_advantages, rloo_advantages

    if name == "rloo":
        return rloo_advantages(rewards, group_size=group_size)
    scale = {"dr_grpo": "none", "grpo_batch": "batch"}.get(name, "group")
    return grpo_advantages(rewards, group_size=group_size, scale=scale)


def token_advantages(est: Estimator, rewards: torch.Tensor, trajectories: list, group_size: int,
                     view: dict[str, Any]) -> tuple[list[list[float]], list[list[int]] | None]:
    """Per completion token advantages (GiGPO, ARPO) for every trajectory, group by group, and for ARPO's
    hard attribution the per-token keep mask (0 on a branch's copies of shared tokens)."""
    from train.core.advantages import arpo_token_advantages, gigpo_token_advantages
    from train.core.advantages.arpo import arpo_token_keep

    out: list[list[float]] = []
    keep: list[list[int]] | None = [] if est.name == "arpo" and est.arpo_mode == "hard" else None
    base = sequence_advantages("grpo", rewards, group_size)
    for g in range(0, len(trajectories), group_size):
        members = trajectories[g:g + group_size]
        for t, r in zip(members, rewards[g:g + group_size].tolist()):
            t.rewards["trl_reward"] = float(r)
        group = Rollout(example_id=f"group-{g // group_size}", trajectories=members, chosen=None)
        if est.name == "gigpo":
            out += gigpo_token_advantages(group, reward_key="trl_reward", gamma=est.gamma, omega=est.omega,
                                          similarity_threshold=est.similarity_threshold, scale=est.gigpo_scale,
                                          episode_mean=est.episode_mean, **view)
        else:
            out += arpo_token_advantages(group, base[g:g + group_size].tolist(), mode=est.arpo_mode, **view)
            if keep is not None:
                keep += arpo_token_keep(group, **view)
    return out, keep


# TRL loss options our policy loss does not implement: (GRPOConfig field, its no-op value).
TRL_ONLY = (("loss_type", "dapo"), ("importance_sampling_level", "token"), ("top_entropy_quantile", 1.0),
            ("off_policy_mask_threshold", None), ("entropy_coef", 0.0), ("use_adaptive_entropy", False),
            ("delta", None))


class AgenticGRPOTrainer(GRPOTrainer):
    """See the module docstring."""

    def __init__(self, *args: Any, estimator: Estimator | None = None, mi_every: int = 5,
                 skip_zero_advantage: bool = True, **kwargs: Any):
        if mi_every < 0:
            raise ConfigError(f"mi_every={mi_every!r}: steps between RAGEN-2 MI probes, >= 0 (0 = off)")
        self.estimator = estimator or Estimator()
        self.mi_every = mi_every
        self.skip_zero_advantage = skip_zero_advantage
        self._last_rewards: torch.Tensor | None = None
        self.diagnostics: list[dict[str, float]] = []
        super().__init__(*args, **kwargs)
        est = self.estimator
        if est.name in ("gigpo", "arpo") and not hasattr(self.rollout_func, "view_kwargs"):
            raise ConfigError(f"estimator {est.name!r} needs our RolloutFunc (train.grpo.rollout)")
        if est.name != "trl":
            for name, neutral in TRL_ONLY:
                value = getattr(self.args, name, neutral)
                if value != neutral:
                    raise ConfigError(f"trl.{name}={value!r} is an option of TRL's loss, which estimator "
                                      f"{est.name!r} replaces with train.core.losses.policy_loss; leave it at "
                                      f"{neutral!r} (loss_type: use estimator.loss_aggregation) or set "
                                      "estimator.name=trl")
        if est.aepo_clip and self.args.num_iterations == 1 \
                and self.args.steps_per_generation <= self.args.gradient_accumulation_steps:
            raise ConfigError("aepo_clip: clipping binds only where the ratio differs from 1, and with "
                              "num_iterations=1 TRL trains on-policy (ratio 1); set trl.num_iterations >= 2 "
                              "(or steps_per_generation > gradient_accumulation_steps)")

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
            per_token, keep = token_advantages(est, rewards, trajs, group_size, self.rollout_func.view_kwargs)
            adv = as_token_tensor(per_token[local], out["completion_ids"].size(1))
            if keep is not None:  # ARPO hard: a shared token is trained once (its copies leave the loss)
                self._train_once(out, as_token_tensor(keep[local], out["completion_ids"].size(1)))
        elif est.name != "trl":
            adv = sequence_advantages(est.name, rewards, group_size)[local]
        else:
            adv = out["advantages"]
        out["advantages"] = adv.to(out["completion_ids"].device)
        self._log_diagnostics(mode, rewards, group_size)
        if all(isinstance(x.get("trajectory"), Trajectory) for x in inputs):
            trajs = trajectories_of(inputs)
            self._log_anchor_share(mode, trajs, group_size)
            calls = [tool_counts(t)[0] for t in trajs]  # the tool-use-collapse watch (verl #1569, ReCall #76)
            self._metrics[mode]["diag/tool_call_rate"].append(sum(c > 0 for c in calls) / len(calls))
            self._metrics[mode]["diag/tool_calls"].append(sum(calls) / len(calls))
            if getattr(self.rollout_func, "branching", "none") != "none":  # the episodes that are ARPO/AEPO branches
                self._metrics[mode]["diag/branch_share"].append(sum(t.parent_id is not None for t in trajs) / len(trajs))
        if mode == "train" and self.mi_every and self.state.global_step % self.mi_every == 0:
            self._log_mutual_information(out)
        return out

    def _log_mutual_information(self, out: dict[str, Any]) -> None:
        """RAGEN-2's template-collapse probe on this batch (`train.grpo.probes`): `diag/mi`, `diag/mi_retrieval_acc`
        (nothing when the batch holds fewer than two distinct prompts)."""
        from train.grpo.probes import batch_mutual_information

        res = batch_mutual_information(self.model, out["prompt_ids"], out["prompt_mask"], out["completion_ids"],
                                       out["completion_mask"], out.get("tool_mask"), seed=self.state.global_step)
        if res is not None:
            self._metrics["train"]["diag/mi"].append(res[0])
            self._metrics["train"]["diag/mi_retrieval_acc"].append(res[1])

    def _train_once(self, out: dict[str, Any], keep: torch.Tensor) -> None:
        """Fold ARPO's keep mask into the tool mask and recount the trained tokens (the token-mean's normaliser)."""
        mask = out.get("tool_mask", torch.ones_like(out["completion_mask"]))
        out["tool_mask"] = mask * keep.to(mask.device, mask.dtype)
        trained = trained_mask(out).sum()
        out["num_items_in_batch"] = self.accelerator.gather(trained).sum()

    def _log_anchor_share(self, mode: str, trajectories: list[Trajectory], group_size: int) -> None:
        """`diag/anchor_share`: the share of this process's steps in an anchor group of two or more within their
        task's group (GiGPO's step groups; logged for every estimator, so a GRPO run shows it too)."""
        from train.core.advantages.gigpo import anchor_counts

        anchored = steps = 0
        for g in range(0, len(trajectories), group_size):
            a, n = anchor_counts([[s.state for s in t.steps] for t in trajectories[g:g + group_size]],
                                 similarity_threshold=self.estimator.similarity_threshold)
            anchored, steps = anchored + a, steps + n
        if steps:
            self._metrics[mode]["diag/anchor_share"].append(anchored / steps)

    def _log_diagnostics(self, mode: str, rewards: torch.Tensor, group_size: int) -> None:
        from train.core.diagnostics import step_stats

        stats = step_stats(rewards, group_size=group_size)
        for k, v in stats.items():
            self._metrics[mode][f"diag/{k}"].append(v)

    # -- loss --------------------------------------------------------------------------------------------------
    def _compute_loss(self, model, inputs):
        est = self.estimator
        if est.name == "trl":
            return super()._compute_loss(model, inputs)
        from train.core.advantages import entropy_aware_advantages
        from train.core.losses import policy_loss

        mode = "train" if self.model.training else "eval"
        scale = 1.0
        if self._rows_can_be_skipped():
            sub = trained_rows(inputs, aggregation=est.aggregation)
            rows = inputs["completion_ids"].size(0)
            self._metrics[mode]["diag/trained_rows"].append(0.0 if sub is None else sub.kept / rows)
            if sub is None:
                return self._zero_loss(model, inputs, mode)
            inputs, scale = sub.inputs, sub.scale
        mask = trained_mask(inputs)
        logps, entropies = self._completion_logps(model, inputs)
        old = inputs.get("old_per_token_logps")
        old = logps.detach() if old is None else old
        adv = inputs["advantages"]
        if est.aepo_alpha > 0:
            adv = entropy_aware_advantages(adv, entropies, mask, alpha=est.aepo_alpha)
        kl = None
        if self.beta != 0.0:  # TRL's k3 estimator against the reference model
            ref = inputs["ref_per_token_logps"]
            kl = torch.exp(ref - logps) - (ref - logps) - 1
            if self.args.use_bias_correction_kl:
                kl = kl * torch.exp(logps - old.detach())
        if "importance_sampling_ratio" in inputs:  # vLLM generation: TRL's truncated IS correction
            adv = adv[:, None] * inputs["importance_sampling_ratio"] if adv.dim() == 1 \
                else adv * inputs["importance_sampling_ratio"]
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        tokens = None
        if est.aggregation == "token-mean":  # TRL's "dapo": the generation batch's tokens, per accumulation window
            tokens = inputs["num_items_in_batch"].clamp(min=1.0) / self.accelerator.num_processes
            if mode == "train":
                tokens = tokens * accumulation / self.args.steps_per_generation
        loss, stats = policy_loss(
            logps, old, adv, mask.float(), aggregation=est.aggregation, constant=self.max_completion_length,
            tokens=tokens, eps_low=self.epsilon_low if est.eps_low is None else est.eps_low,
            eps_high=est.eps_high if est.eps_high is not None else (
                self.epsilon_high if est.eps_low is None else est.eps_low),
            entropy_balanced=est.aepo_clip, clip_ratio_c=est.clip_ratio_c, kl=kl, beta=self.beta)
        for k, v in stats.items():
            self._metrics[mode][f"diag/{k}"].append(v)
        m = mask.float()
        self._metrics[mode]["entropy"].append(float((entropies.detach() * m).sum() / m.sum().clamp(min=1)))
        if kl is not None:
            self._metrics[mode]["kl"].append(float((kl.detach() * m).sum() / m.sum().clamp(min=1)))
        return scale * (loss if tokens is not None else loss / accumulation)

    def _completion_logps(self, model, inputs) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-token log-probs and entropies of the completion tokens (TRL's scorer over prompt + completion)."""
        ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], dim=1)
        logps, entropies, _ = self._get_per_token_logps_and_entropies(
            model, ids, attention, inputs["completion_ids"].size(1), compute_entropy=True)
        return logps, entropies

    def _rows_can_be_skipped(self) -> bool:
        """Rows without advantage leave the loss unchanged (`train.grpo.trained_rows`) unless a KL term or
        AEPO's batch-standardised entropy involves them."""
        return self.skip_zero_advantage and self.beta == 0.0 and self.estimator.aepo_alpha == 0

    def _zero_loss(self, model, inputs, mode: str) -> torch.Tensor:
        """The loss of a micro-batch without a trained row: 0, with no forward or backward. The step's entropy
        still gets a value: when none was logged yet in this logging window, one no-grad forward measures it."""
        if not self._metrics[mode]["entropy"]:
            with torch.no_grad():
                _, entropies = self._completion_logps(model, inputs)
            m = trained_mask(inputs).float()
            self._metrics[mode]["entropy"].append(float((entropies * m).sum() / m.sum().clamp(min=1)))
        if self.accelerator.num_processes > 1:  # DDP: this rank's backward must still reach the all-reduce, so a
            one = {k: inputs[k][:1, -1:] if k in PROMPT_KEYS else inputs[k][:1, :1]  # forward of one token, x 0
                   for k in ("prompt_ids", "prompt_mask", "completion_ids", "completion_mask")}
            return self._completion_logps(model, one)[0].sum() * 0.0
        return torch.zeros((), device=inputs["completion_ids"].device, requires_grad=True)

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
