"""Our advantage estimators inside verl 0.9.1 (extra `verl`; verl is imported only when registering).

    register_estimators()      # verl's register_adv_est(name)(fn) for each of ESTIMATORS
    # in a verl job: +ray_kwargs.ray_init.runtime_env.worker_process_setup_hook=train.verl_estimators.register_estimators

`register_estimators()` registers `agentic_dr_grpo` and `agentic_gigpo` with verl's
`register_adv_est`. The overrides make Ray run it in every worker process of the job
(`+ray_kwargs.ray_init.runtime_env.worker_process_setup_hook`: verl merges `ray_kwargs.ray_init.runtime_env`
into the `ray.init` of `main_ppo`), so it has run in the TaskRunner actor where `compute_advantage` looks the
name up. The custom reward file is no such hook: verl 0.9.1 loads it in its RewardLoopWorker actors, other
processes. Ray's workers import this package, so agentic-infer must be installed in verl's environment.

What verl hands a registered estimator: `compute_advantage(data, adv_estimator=...)` (`ray_trainer.py`) calls it
with `token_level_rewards`, `response_mask`, `config` (the `algorithm` section) and `index` (each row's prompt
`uid`) only; `non_tensor_batch` goes to "gdpo" alone, and the default v1 trainer (`trainer.use_v1`) fetches only
uid, response_mask, rm_scores, log-probs and values from its TransferQueue before calling it. Hence:
- `agentic_dr_grpo`: Dr. GRPO from those: r − the mean of the row's uid group on every response token (no std;
  a group of one gets 0). Pair it with `actor_rollout_ref.actor.loss_agg_mode=seq-mean-token-sum-norm`.
- `agentic_gigpo`: GiGPO over whole trajectories (one verl row each, from `train.verl_agent_loop`), which needs
  each row's steps: `non_tensor_batch[STEPS_FIELD]` = `{"states", "rewards", "spans", "turns"}` (anchor state,
  step reward, the step's [start, end) in the response tokens; the row's model turns), the column verl's `AgentLoopWorker` makes from the
  agent loop's `extra_fields[STEPS_FIELD]`. verl 0.9.1's own `compute_advantage` never passes it, so there it
  raises a ConfigError instead of training episode-level GRPO under GiGPO's name, and `overrides()` refuses
  "gigpo". It runs when a trainer hands it `non_tensor_batch` (as verl-agent's fork of verl does for its GiGPO).
  Options from `algorithm.gigpo.{gamma,omega,similarity_threshold,scale,episode_mean}` (absent: `gigpo_advantages`' defaults).
Not covered: a stock-verl route for the GiGPO step term (it needs a trainer that forwards the batch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentic_infer.errors import ConfigError

STEPS_FIELD = "agentic_steps"  # the agent loop's extra field (= the batch column) with each row's steps
GIGPO_OPTIONS = ("gamma", "omega", "similarity_threshold", "scale", "episode_mean")
GIGPO_NOT_IN_VERL = (
    "agentic_gigpo needs each row's steps (non_tensor_batch['agentic_steps']: anchor states, step rewards, token "
    "spans), and verl 0.9.1's compute_advantage passes non_tensor_batch to 'gdpo' only (its v1 trainer does not "
    "even fetch it), so the step term cannot be computed inside stock verl. Use "
    "algorithm.adv_estimator=grpo algorithm.norm_adv_by_std_in_grpo=false for GiGPO's episode term alone (mean "
    "normalisation over the trajectories), or a trainer that calls the estimator with non_tensor_batch=")


def agentic_dr_grpo(token_level_rewards, response_mask, index=None, config=None, **kw):
    """Dr. GRPO as a verl estimator (see the module docstring); returns (advantages, returns)."""
    from train.core.advantages import broadcast, grpo_advantages

    scores = token_level_rewards.sum(-1)
    adv = grpo_advantages(scores, group_ids=_uids(index, len(scores)), scale="none")
    adv = broadcast(adv, response_mask).to(token_level_rewards)
    return adv, adv


def agentic_gigpo(token_level_rewards, response_mask, index=None, config=None, non_tensor_batch=None, **kw):
    """GiGPO as a verl estimator, per uid group of whole-trajectory rows (see the module docstring): tokens of a
    step's span get A^E + ω·A^S, the row's other model tokens A^E, masked tokens 0; returns (advantages, returns)."""
    from train.core.advantages import gigpo_advantages
    from train.core.advantages.gigpo import with_outcome

    if non_tensor_batch is None or STEPS_FIELD not in non_tensor_batch:
        raise ConfigError(GIGPO_NOT_IN_VERL)
    options = gigpo_options(config)
    scores = token_level_rewards.sum(-1).tolist()
    steps = [row_steps(r, i) for i, r in enumerate(non_tensor_batch[STEPS_FIELD])]
    if len(steps) != len(scores):
        raise ConfigError(f"non_tensor_batch[{STEPS_FIELD!r}] has {len(steps)} rows for {len(scores)} rewards")
    groups: dict[str, list[int]] = {}
    for i, uid in enumerate(_uids(index, len(scores))):
        groups.setdefault(uid, []).append(i)
    adv = token_level_rewards.new_zeros(token_level_rewards.shape)
    for rows in groups.values():
        # the outcome is the episode's total (train.core's `outcome_on_last_step`)
        step_rewards = [with_outcome(steps[i]["rewards"], scores[i]) for i in rows]
        res = gigpo_advantages([scores[i] for i in rows], step_rewards, [steps[i]["states"] for i in rows],
                               turns=[steps[i]["turns"] for i in rows], **options)
        for k, i in enumerate(rows):
            adv[i] = res.episode[k]
            for j, span in enumerate(steps[i]["spans"]):
                if span is not None:
                    adv[i, span[0]:span[1]] = res.combined[k][j]
    adv = adv * response_mask
    return adv, adv


def gigpo_options(config: Any) -> dict[str, Any]:
    """`gigpo_advantages` keyword options from the `gigpo` section of verl's `algorithm` config (or none)."""
    section = config.get("gigpo") if config is not None and hasattr(config, "get") else None
    options = dict(section or {})
    unknown = sorted(set(options) - set(GIGPO_OPTIONS))
    if unknown:
        raise ConfigError(f"algorithm.gigpo: unknown option(s) {unknown}; choose from {list(GIGPO_OPTIONS)}")
    return options


def row_steps(record: Any, i: int) -> dict[str, list]:
    """One row's `{"states", "rewards", "spans", "turns"}` record, checked (lists of one entry per step; `turns`
    defaults to the number of steps, at least 1)."""
    if not isinstance(record, Mapping) or any(k not in record for k in ("states", "rewards", "spans")):
        raise ConfigError(f"row {i}: {STEPS_FIELD} must be a dict with states, rewards and spans (one per step); "
                          f"got {record!r}; the agent loop is train.verl_agent_loop.AgenticAgentLoop")
    out: dict[str, Any] = {k: list(record[k]) for k in ("states", "rewards", "spans")}
    if not len(out["states"]) == len(out["rewards"]) == len(out["spans"]):
        raise ConfigError(f"row {i}: {STEPS_FIELD} has {len(out['states'])} states, {len(out['rewards'])} rewards "
                          f"and {len(out['spans'])} spans; pass one of each per step")
    out["rewards"] = [float(r) for r in out["rewards"]]
    out["turns"] = int(record.get("turns") or max(1, len(out["states"])))
    return out


def _uids(index: Any, n: int) -> list[str]:
    if index is None or len(index) != n:
        raise ConfigError(f"index: verl passes each row's prompt uid (non_tensor_batch['uid']); got "
                          f"{None if index is None else len(index)} for {n} rows")
    return [str(u) for u in index]


ESTIMATORS = {"agentic_dr_grpo": agentic_dr_grpo, "agentic_gigpo": agentic_gigpo}
SETUP_HOOK = f"{__name__}.register_estimators"


def register_estimators() -> None:
    """Register `ESTIMATORS` with verl's `register_adv_est` (idempotent: the same functions each time). Ray runs
    it in each worker process as the `worker_process_setup_hook` that `overrides()` sets."""
    try:
        from verl.trainer.ppo.core_algos import register_adv_est
    except ImportError as e:
        raise ConfigError("register_estimators: verl is not importable here; install agentic-infer[verl] in "
                          "verl's environment") from e
    for name, fn in ESTIMATORS.items():
        register_adv_est(name)(fn)


__all__ = ["ESTIMATORS", "GIGPO_NOT_IN_VERL", "SETUP_HOOK", "STEPS_FIELD", "agentic_dr_grpo", "agentic_gigpo",
           "gigpo_options", "register_estimators", "row_steps"]
