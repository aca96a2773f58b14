"""Mutation testing of train/, synth/, the envs and the RL parts they drive: does the suite catch realistic bugs?

    .venv/bin/python bench/mutants.py                 # every mutant, a table at the end
    .venv/bin/python bench/mutants.py --only dr_grpo_std --only arpo_hard_copies
    .venv/bin/python bench/mutants.py --list

Each mutant is one small source edit a developer could plausibly make (an off-by-one comparison, an option
read but not passed on, a wrong axis). For each: the edit is applied, the tests that guard that code run
(`pytest -x -q`), and the file is restored (also on Ctrl-C). A mutant is *caught* when those tests fail.
Results go to `runs/mutants.json` (one entry per mutant; a rerun skips the mutants already there unless
`--fresh`), so a stopped run continues. Not covered: mutants of code outside the listed files, equivalent
mutants (none is listed on purpose: each was checked to change behaviour).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "runs" / "mutants.json"

T_ADV = "tests/train/core/test_core_advantages.py"
T_LOSS = "tests/train/core/test_core_losses.py"
T_OPTS = "tests/train/trainers/test_trainer_grpo_options.py"
T_GRPO = "tests/train/trainers/test_trainer_grpo.py"
T_BRANCH_TRAIN = "tests/train/trainers/test_trainer_grpo_branching.py"
T_FILTERS = ("tests/synth/pipeline/test_filters.py", "tests/synth/pipeline/test_group_filters.py")
T_DIAG = "tests/train/core/test_core_diagnostics.py"
T_PROBES = "tests/train/trainers/test_probes.py"
T_REWARDS = ("tests/train/rewards/test_rewards_format_tools.py", "tests/train/rewards/test_rewards_outcome.py")
T_MASKS = "tests/train/core/test_core_masks.py"
T_GATES = "tests/synth/fuzzqa/test_gates.py"
T_VERL = ("-m", "verl", "tests/train/verl")
T_HF_BATCH = "tests/agentic_infer/backends/test_hf_batch.py"
T_GRPO_ENV = "tests/train/test_grpo_env.py"
T_RL = ("tests/train/rl/test_rl_settings.py",)
VERL_PY = ".venv-verl/bin/python"  # `make test-verl` creates it
T_BRANCHING = ("tests/train/core/test_core_branching.py", "tests/agentic_infer/engines/test_branching.py")
T_ENV_BASE = "tests/agentic_infer/envs/test_env_base.py"
T_RETAIL = ("tests/agentic_infer/envs/test_retail_verify.py", "tests/agentic_infer/envs/test_retail_tools.py")
T_TP = "tests/agentic_infer/envs/test_travelplanner_constraints.py"
T_ENV_AGENT = ("tests/agentic_infer/engines/test_env_agent.py", "tests/train/test_grpo_env.py")
T_ENV_EVAL = "tests/eval/test_env_tasks.py"
T_TREE_ENVS = "tests/agentic_infer/engines/tree/test_tree_envs_registry.py"
T_ENVTASKS = "tests/synth/envtasks/test_envtasks_intents.py"


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    what: str
    python: str | None = None  # the interpreter for the tests (default: this one); verl's own venv for verl


MUTANTS = [
    # -- advantages ----------------------------------------------------------------------------------------
    Mutant("dr_grpo_std", "train/grpo/trainer.py", '{"dr_grpo": "none", "grpo_batch": "batch"}',
           '{"dr_grpo": "group", "grpo_batch": "batch"}', (T_GRPO, T_OPTS), "Dr. GRPO keeps the std"),
    Mutant("grpo_batch_is_group_std", "train/grpo/trainer.py", '"grpo_batch": "batch"}', '"grpo_batch": "group"}',
           (T_OPTS,), "grpo_batch divides by the group std"),
    Mutant("gigpo_episode_mean_not_passed", "train/grpo/trainer.py", "episode_mean=est.episode_mean, **view)",
           "**view)", (T_OPTS,), "the trainer ignores estimator.episode_mean"),
    Mutant("grpo_biased_std", "train/core/advantages/grpo.py", "(sq / (size - 1).clamp(min=1)).sqrt()",
           "(sq / size.clamp(min=1)).sqrt()", (T_ADV,), "population std instead of TRL's unbiased std"),
    Mutant("rloo_mean_baseline", "train/core/advantages/grpo.py", "return torch.where(size > 1, r - others,",
           "return torch.where(size > 1, r - mean,", (T_ADV, T_GRPO), "RLOO's baseline includes the sample"),
    Mutant("gigpo_no_step_term", "train/core/advantages/gigpo.py", "combined.append([episode[i] + omega * a",
           "combined.append([episode[i] + 0 * a", (T_ADV, T_OPTS), "GiGPO's step term dropped (ω = 0)"),
    Mutant("gigpo_omega_not_passed", "train/grpo/trainer.py", "reward_key=\"trl_reward\", gamma=est.gamma, omega=est.omega,",
           "reward_key=\"trl_reward\", gamma=est.gamma,", (T_OPTS,), "the trainer ignores estimator.omega"),
    Mutant("gigpo_gamma_ignored", "train/core/advantages/gigpo.py", "acc = float(rewards[t]) + gamma * acc",
           "acc = float(rewards[t]) + acc", (T_ADV, T_OPTS), "undiscounted step returns"),
    Mutant("gigpo_std_default", "train/grpo/trainer.py", 'gigpo_scale: str = "none"', 'gigpo_scale: str = "group"',
           (T_GRPO,), "the trainer defaults GiGPO to std normalisation again"),
    Mutant("gigpo_scale_not_passed", "train/grpo/trainer.py", "scale=est.gigpo_scale,", "",
           (T_OPTS,), "the trainer ignores estimator.gigpo_scale"),
    Mutant("gigpo_episode_mean_per_trajectory", "train/core/advantages/gigpo.py",
           'weights = turns if episode_mean == "steps" else [1] * n', "weights = [1] * n",
           (T_ADV, T_OPTS), "the cross-step episode mean becomes a per-trajectory mean"),
    Mutant("gigpo_singleton_zero", "train/core/advantages/gigpo.py",
           'return [rows[0] if scale == "none" else rows[0] / (1 + eps)]', "return [0.0]", (T_ADV,),
           "a single-row group gets 0, not its raw score"),
    Mutant("gigpo_similarity_not_passed", "train/grpo/trainer.py",
           "similarity_threshold=est.similarity_threshold, scale=est.gigpo_scale,", "scale=est.gigpo_scale,",
           (T_OPTS,), "the trainer ignores similarity_threshold"),
    Mutant("gigpo_states_hashed", "agentic_infer/engines/loop.py",
           'return json.dumps([self.example.get("question", ""), self.executed], ensure_ascii=False)',
           'return str(hash(json.dumps([self.example.get("question", ""), self.executed])))',
           (T_ADV,), "anchor states become digests again (similarity compares hashes)"),
    Mutant("gigpo_none_states_grouped", "train/core/advantages/gigpo.py",
           "        if s is None:\n            reps.append(None)", "        if s is None and False:\n            reps.append(None)",
           (T_ADV,), "steps without a state join one anchor group"),
    Mutant("arpo_hard_copies_trained", "train/grpo/trainer.py", "            if keep is not None:  # ARPO hard",
           "            if False:  # ARPO hard", (T_BRANCH_TRAIN,), "ARPO hard trains every copy of a shared token"),
    Mutant("arpo_copies_wrong_side", "train/core/advantages/arpo.py", "for j in range(i)) for t in range(lengths[i])]",
           "for j in range(i + 1, n)) for t in range(lengths[i])]", (T_ADV, T_BRANCH_TRAIN),
           "the root's tokens are masked instead of the branches' copies"),
    Mutant("arpo_hard_sum", "train/core/advantages/arpo.py", "row.append(float(sum(share) / len(share)))",
           "row.append(float(sum(share)))", (T_ADV, T_BRANCH_TRAIN), "hard attribution sums instead of averaging"),
    Mutant("aepo_entropy_not_detached", "train/core/advantages/aepo.py", "h = standardise(entropy.detach(), mask)",
           "h = standardise(entropy, mask)", (T_ADV,), "the entropy in AEPO's advantage carries a gradient"),
    # -- losses --------------------------------------------------------------------------------------------
    Mutant("dr_grpo_token_mean", "train/grpo/trainer.py",
           'return DR_GRPO_AGGREGATION if self.name == "dr_grpo" else "token-mean"', 'return "token-mean"',
           (T_OPTS,), "Dr. GRPO keeps the token-mean loss"),
    Mutant("aggregation_not_passed", "train/grpo/trainer.py", "mask.float(), aggregation=est.aggregation,",
           "mask.float(),", (T_OPTS,), "the trainer ignores loss_aggregation"),
    Mutant("dr_grpo_constant_is_T", "train/grpo/trainer.py", "constant=self.max_completion_length,", "",
           (T_OPTS,), "Dr. GRPO divides by the padded length, not max_completion_length"),
    Mutant("dual_clip_not_passed", "train/grpo/trainer.py", "clip_ratio_c=est.clip_ratio_c,", "",
           (T_OPTS,), "the dual clip is never applied"),
    Mutant("dual_clip_sign", "train/core/losses.py", "cap = -adv * clip_ratio_c", "cap = adv * clip_ratio_c",
           (T_LOSS,), "the dual clip's bound with the wrong sign"),
    Mutant("eps_low_not_passed", "train/grpo/trainer.py",
           "eps_low=self.epsilon_low if est.eps_low is None else est.eps_low,", "eps_low=self.epsilon_low,",
           (T_OPTS,), "the trainer ignores estimator.eps_low"),
    Mutant("eps_high_not_passed", "train/grpo/trainer.py", "eps_high=est.eps_high if est.eps_high is not None else (",
           "eps_high=None if est.eps_high is not None else (", (T_OPTS,), "the trainer ignores estimator.eps_high"),
    Mutant("aepo_clip_not_passed", "train/grpo/trainer.py", "entropy_balanced=est.aepo_clip,",
           "entropy_balanced=False,", (T_OPTS,), "the trainer ignores aepo_clip"),
    Mutant("aepo_clip_no_gradient", "train/core/losses.py", "upper = (1 + eps_high) * ratio / ratio.detach()",
           "upper = (1 + eps_high) * ratio.detach() / ratio.detach()", (T_LOSS,),
           "entropy-balanced clipping keeps the value but not the gradient"),
    Mutant("aepo_alpha_not_applied", "train/grpo/trainer.py", "        if est.aepo_alpha > 0:\n            adv = entropy",
           "        if est.aepo_alpha > 9:\n            adv = entropy", (T_OPTS,), "the trainer ignores aepo_alpha"),
    Mutant("aepo_clip_allowed_on_policy", "train/grpo/trainer.py", "if est.aepo_clip and self.args.num_iterations == 1",
           "if est.aepo_clip and self.args.num_iterations == 0", (T_OPTS,),
           "aepo_clip accepted where it cannot bind"),
    Mutant("kl_dropped", "train/grpo/trainer.py", "entropy_balanced=est.aepo_clip, clip_ratio_c=est.clip_ratio_c, kl=kl,",
           "entropy_balanced=est.aepo_clip, clip_ratio_c=est.clip_ratio_c, kl=None,", (T_OPTS,), "β·KL never added"),
    Mutant("kl_bias_correction_dropped", "train/grpo/trainer.py", "                kl = kl * torch.exp(logps - old.detach())",
           "                pass", (T_OPTS,), "TRL's importance-weighted KL not reproduced"),
    Mutant("trl_options_accepted", "train/grpo/trainer.py", "                if value != neutral:\n",
           "                if False:\n", (T_OPTS,), "TRL-only loss options silently ignored"),
    Mutant("observation_tokens_trained", "train/grpo/trainer.py",
           '        mask = completion_mask if "tool_mask" not in inputs else completion_mask * inputs["tool_mask"]\n'
           '        logps, entropies',
           "        mask = completion_mask\n        logps, entropies", (T_GRPO, T_OPTS), "observations enter the loss"),
    Mutant("ppo_clip_min_max", "train/core/losses.py", "per_token = -torch.min(surr1, surr2)",
           "per_token = -torch.max(surr1, surr2)", (T_LOSS,), "the optimistic instead of the pessimistic bound"),
    Mutant("seq_mean_all_rows", "train/core/losses.py", "return (per_seq * has).sum() / has.sum().clamp(min=1)",
           "return per_seq.mean()", (T_LOSS,), "seq-mean counts sequences without trained tokens"),
    # -- synth filters --------------------------------------------------------------------------------------
    Mutant("band_high_inclusive", "synth/pipeline/filters.py", "if acc > high else", "if acc >= high else",
           T_FILTERS, "accuracy exactly at the upper bound dropped"),
    Mutant("band_low_inclusive", "synth/pipeline/filters.py", "if acc < low else", "if acc <= low else",
           T_FILTERS, "accuracy exactly at the lower bound dropped"),
    Mutant("variance_keeps_zero", "synth/pipeline/filters.py", "KEEP if v >= cut and v > 0 else", "KEEP if v >= cut else",
           T_FILTERS, "RAGEN-2's filter keeps zero-variance groups"),
    Mutant("correct_strict_threshold", "synth/pipeline/filters.py", "return KEEP if v >= threshold else (False, f\"incorrect:",
           "return KEEP if v > threshold else (False, f\"incorrect:", T_FILTERS, "a perfect score is not 'correct'"),
    Mutant("gate_too_easy_any", "synth/fuzzqa/gates.py", "return KEEP if not any(v.correct for v in closed_book)",
           "return KEEP if not all(v.correct for v in closed_book)", (T_GATES,),
           "ASearcher's difficulty gate passes questions one closed-book answer got right"),
    Mutant("gate_solvable_strict", "synth/fuzzqa/gates.py", "sum(v.correct for v in with_tools) >= min_correct",
           "sum(v.correct for v in with_tools) > min_correct", (T_GATES,), "TaskCraft's check needs one run too many"),
    # -- rewards, masks, budgets ------------------------------------------------------------------------------
    Mutant("otc_sin", "train/rewards/tool_use.py", "alpha * math.cos(tool_calls * math.pi", "alpha * math.sin(tool_calls * math.pi",
           T_REWARDS, "OTC-PPO's tool reward with sin for cos"),
    Mutant("otc_wrong_answers_rewarded", "train/rewards/tool_use.py", "(2 * tool_calls + c)) * float(correct)",
           "(2 * tool_calls + c))", T_REWARDS, "OTC's tool reward also for wrong answers"),
    Mutant("torl_exec_penalty_always", "train/rewards/tool_use.py", "tool_counts(inp.trajectory)[1] > 0:",
           "tool_counts(inp.trajectory)[1] >= 0:", T_REWARDS, "ToRL's code-failure penalty on every answer"),
    Mutant("toolrl_jaccard_denominator", "agentic_infer/verify/toolrl.py", "jac = len(gk & pk) / len(gk | pk)",
           "jac = len(gk & pk) / len(gk)", T_REWARDS, "parameter-name overlap over the gold names only"),
    Mutant("toolrl_range", "agentic_infer/verify/toolrl.py", "return 6 * (r_name + _best_match(gold, pred)) / s_max - 3",
           "return 3 * (r_name + _best_match(gold, pred)) / s_max", T_REWARDS, "ToolRL's R_correct in [0, 3]"),
    Mutant("r1_searcher_stage_boundary", "train/rewards/schedules.py", "return 1 if step < switch_step else 2",
           "return 1 if step <= switch_step else 2", T_REWARDS, "R1-Searcher's stage switch one step late"),
    Mutant("loss_mask_ignores_env", "train/core/masks.py",
           'out["loss_mask"][i, :n] = torch.tensor(v.env_mask, dtype=torch.float)',
           'out["loss_mask"][i, :n] = 1.0', (T_MASKS,), "padded batches train observation tokens"),
    Mutant("tool_budget_off_by_one", "train/core/tool_budget.py", "    if left > 0:", "    if left >= 0:",
           ("tests/train/core/test_core_branching.py",), "one tool call beyond the budget"),
    # -- branching (ARPO / AEPO) ------------------------------------------------------------------------------
    Mutant("arpo_window_1", "agentic_infer/engines/branching.py", "*, seed: int | None = 0, window: int = 20,",
           "*, seed: int | None = 0, window: int = 1,", T_BRANCHING, "the entropy window shrunk from 20 tokens to 1"),
    Mutant("aepo_penalty_power", "agentic_infer/engines/branching.py", "return max(0.0, 1.0 - penalty * consecutive)",
           "return (1.0 - penalty) ** consecutive", T_BRANCHING, "AEPO's penalty as (1 − p)^l"),
    Mutant("aepo_penalty_ban", "agentic_infer/engines/branching.py", "    penalty: float = 0.05",
           "    penalty: float = 0.5", T_BRANCHING, "the old penalty constant (a ban on consecutive branching)"),
    Mutant("arpo_two_copies", "agentic_infer/engines/branching.py", "    branch_factor: int = 1",
           "    branch_factor: int = 2", T_BRANCHING, "ARPO forks 2 copies instead of beam − 1 = 1"),
    Mutant("entropy_not_normalised", "agentic_infer/engines/branching.py",
           "return sum(vals) / len(vals) / math.log(top_k) if vals else 0.0",
           "return sum(vals) / len(vals) if vals else 0.0", T_BRANCHING, "window entropies not divided by log k"),
    Mutant("branch_draw_reversed", "agentic_infer/engines/branching.py",
           "beta=rule.beta, factor=factor) >= rule.tau", "beta=rule.beta, factor=factor) < rule.tau",
           T_BRANCHING, "a copy branches when the score is below τ"),
    Mutant("branch_draw_strict", "agentic_infer/engines/branching.py",
           "beta=rule.beta, factor=factor) >= rule.tau", "beta=rule.beta, factor=factor) > rule.tau",
           T_BRANCHING, "> for ≥ at τ"),
    Mutant("branch_beta_ignored", "agentic_infer/engines/branching.py",
           "return min(1.0, max(0.0, (base + beta * (h_now - h_initial)) * factor))",
           "return min(1.0, max(0.0, base * factor))", T_BRANCHING, "β·ΔH dropped from the branching score"),
    # -- the verl path (in .venv-verl) ----------------------------------------------------------------------
    Mutant("verl_dict_gold_unread", "train/rewards/adapters.py", '        ground_truth = ground_truth["target"]',
           "        return None", T_VERL, "verl's reward shim scores the exported {target: [...]} shape 0",
           VERL_PY),
    Mutant("verl_export_plain_list", "synth/export.py", '"ground_truth": {"target": [str(g) for g in gold]}}',
           '"ground_truth": [str(g) for g in gold]}', T_VERL, "the export writes the other ground-truth shape",
           VERL_PY),
    Mutant("verl_hook_registers_nothing", "train/verl_estimators.py", "        register_adv_est(name)(fn)",
           "        pass", T_VERL, "the Ray setup hook runs but registers no estimator", VERL_PY),
    Mutant("verl_gigpo_no_step_term", "train/verl_estimators.py", "adv[i, span[0]:span[1]] = res.combined[k][j]",
           "adv[i, span[0]:span[1]] = res.episode[k]", T_VERL, "verl's agentic_gigpo drops the step term", VERL_PY),
    # -- diagnostics ----------------------------------------------------------------------------------------
    Mutant("mi_wrong_axis", "train/core/diagnostics.py", "(matched - torch.logsumexp(L, dim=1) + math.log(n))",
           "(matched - torch.logsumexp(L, dim=0) + math.log(n))", (T_DIAG,), "MI proxy normalised over samples"),
    Mutant("mi_argmax_axis", "train/core/diagnostics.py", "acc = (L.argmax(dim=1) == idx)", "acc = (L.argmax(dim=0) == idx)",
           (T_DIAG,), "retrieval accuracy over the wrong axis"),
    Mutant("echo_spike_from_std", "train/core/diagnostics.py", "for i in range(e, len(gn)) if gn[i]",
           "for i in range(s, len(gn)) if gn[i]", (T_DIAG,), "a spike before the entropy fall counts"),
    Mutant("echo_entropy_before_std", "train/core/diagnostics.py", "if s is None or e is None or e < s:",
           "if s is None or e is None:", (T_DIAG,), "an entropy fall before the std fall counts"),
    Mutant("probe_observations_scored", "train/grpo/probes.py",
           "trained = keep if tool_mask is None else keep & tool_mask.bool()", "trained = keep",
           (T_PROBES,), "the MI probe scores observation tokens"),
    Mutant("probe_off_by_one", "train/grpo/probes.py", "row = logits[b, :-1].float()", "row = logits[b, 1:].float()",
           (T_PROBES,), "logits aligned with the wrong tokens"),
    Mutant("mi_probe_never_runs", "train/grpo/trainer.py", "if mode == \"train\" and self.mi_every and",
           "if mode == \"nope\" and self.mi_every and", (T_GRPO,), "the trainer never computes the MI proxy"),
    # -- environments (issue 22) ---------------------------------------------------------------------------
    Mutant("env_lists_ordered", "agentic_infer/envs/base.py",
           "return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, ensure_ascii=False))", "return items",
           (T_ENV_BASE,), "the canonical digest hashes lists in their order (tau2-bench #514)"),
    Mutant("retail_no_action_check", "agentic_infer/envs/retail/verify.py",
           "checks = [check_state(db, gold_db), check_actions(calls, gold_calls), check_outputs(outputs, said)]",
           "checks = [check_state(db, gold_db), check_outputs(outputs, said)]", T_RETAIL,
           "retail's verdict drops the action check (tau2-bench #224)"),
    Mutant("retail_outputs_keep_commas", "agentic_infer/envs/retail/verify.py",
           'texts = [s.lower().replace(",", "") for s in said if s]', "texts = [s.lower() for s in said if s]",
           T_RETAIL, "required outputs are matched with the agent's commas kept"),
    Mutant("tp_drive_by_substring", "agentic_infer/envs/travelplanner/constraints.py",
           r'r"self[-\s]?driv|\bdriv(?:e|es|ing|en)\b|\bdrove\b"', 'r"self-driving"', (T_TP,),
           "TravelPlanner finds self-driving by substring: 'Drive' escapes (TravelPlanner #51)"),
    Mutant("pass_hat_is_pass_at", "eval/stats.py", "return math.comb(c, k) / math.comb(n, k)",
           "return 1 - math.comb(n - c, k) / math.comb(n, k)", (T_ENV_EVAL,), "pass^k computed as pass@k"),
    Mutant("env_step_reward_dropped", "agentic_infer/engines/loop.py", "reward=out.reward, segment=call.segment,",
           "segment=call.segment,", T_ENV_AGENT, "an env's per-step reward never reaches Step.reward"),
    Mutant("end_of_turn_masked", "agentic_infer/engines/loop.py", "if eot and turn.startswith(eot)",
           "if False and eot and turn.startswith(eot)", T_ENV_AGENT,
           "the end-of-turn token before a user reply stays in the masked user turn"),
    Mutant("tree_env_no_restore", "agentic_infer/engines/tree/env_world.py",
           '        env.restore(state["snapshot"])  # from here', '        pass  # from here', (T_TREE_ENVS,),
           "a tree node's step runs on whatever state the shared env was left in"),
    Mutant("envtasks_intent_always_complete", "synth/envtasks/facts.py",
           "return [n for n in needs if not all(_contains(text, fold(p)) for p in n.phrases)]", "return []",
           (T_ENVTASKS,), "a synthesized intent that misses an argument is kept"),
    Mutant("batch_positions_from_zero", "agentic_infer/backends/hf_batch.py",
           "[0] * (width_f - f) + list(range(n, n + f))", "[0] * (width_f - f) + list(range(f))", (T_HF_BATCH,),
           "a reused prefix's new tokens get positions as if they started the sequence"),
    Mutant("batch_pad_unmasked", "agentic_infer/backends/hf_batch.py",
           "[0] * (width_c - n) + [1] * n + [0] * (width_f - f) + [1] * f",
           "[0] * (width_c - n) + [1] * n + [1] * (width_f - f) + [1] * f", (T_HF_BATCH,),
           "left padding of a batched prompt is attended to"),
    Mutant("batch_stale_weights", "agentic_infer/backends/hf_batch.py",
           "        if version != self.version:", "        if self.version is None:", (T_HF_BATCH,),
           "keys and values of older weights are reused after an optimizer step"),
    Mutant("gigpo_outcome_paid_twice", "train/core/advantages/gigpo.py",
           "rs[-1] += float(outcome) - sum(rs)", "rs[-1] += float(outcome)", (T_ADV, T_GRPO_ENV),
           "a game that pays its goal step gets the outcome on top (the goal counted twice)"),
    Mutant("anchor_share_counts_singletons", "train/core/advantages/gigpo.py",
           "return sum(sizes[g] >= 2 for g in groups), len(groups)", "return sum(sizes[g] >= 1 for g in groups), "
           "len(groups)", (T_ADV, T_GRPO_ENV), "a step alone in its state counts as anchored"),
    Mutant("rl_held_out_seeds_allowed", "train/rl/recipe.py", "first + count > HELD_OUT_FROM",
           "first + count > 10 * HELD_OUT_FROM", T_RL, "validation or training may use the held-out seeds"),
]


def run_one(m: Mutant, python: str) -> dict:
    path = ROOT / m.file
    source = path.read_text()
    if source.count(m.old) != 1:
        return {"name": m.name, "status": "stale", "detail": f"the text to mutate occurs {source.count(m.old)}x"}
    if m.python and not (ROOT / m.python).exists():
        return {"name": m.name, "status": "skipped", "detail": f"{m.python} missing: run `make test-verl` first"}
    t0 = time.perf_counter()
    try:
        path.write_text(source.replace(m.old, m.new))
        proc = subprocess.run([str(ROOT / m.python) if m.python else python, "-m", "pytest", "-x", "-q", "-p",
                               "no:cacheprovider", *m.tests],
                              cwd=ROOT, capture_output=True, text=True)
    finally:
        path.write_text(source)
    tail = (proc.stdout.strip().splitlines() or [""])[-1]
    status = "caught" if proc.returncode == 1 else "missed" if proc.returncode == 0 else f"error rc={proc.returncode}"
    return {"name": m.name, "status": status, "detail": tail, "seconds": round(time.perf_counter() - t0, 1),
            "file": m.file, "what": m.what}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="run only this mutant (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--fresh", action="store_true", help="forget earlier results")
    args = ap.parse_args(argv)
    if args.list:
        for m in MUTANTS:
            print(f"{m.name:38s} {m.file:40s} {m.what}")
        return 0
    unknown = set(args.only) - {m.name for m in MUTANTS}
    if unknown:
        ap.error(f"unknown mutants {sorted(unknown)}; see --list")
    done = {} if args.fresh or not OUT.exists() else {r["name"]: r for r in json.loads(OUT.read_text())}
    todo = [m for m in MUTANTS if (not args.only or m.name in args.only) and (args.only or m.name not in done)]
    for i, m in enumerate(todo, 1):
        print(f"[{i}/{len(todo)}] {m.name} ...", end=" ", flush=True)
        done[m.name] = run_one(m, sys.executable)
        print(done[m.name]["status"], flush=True)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(list(done.values()), indent=1))
    results = [done[m.name] for m in MUTANTS if m.name in done]
    caught = sum(r["status"] == "caught" for r in results)
    print(f"\n{'mutant':38s} status   file")
    for r in results:
        print(f"{r['name']:38s} {r['status']:8s} {r.get('file', '')}")
    print(f"\ncaught {caught} of {len(results)}")
    return 0 if caught == len(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
