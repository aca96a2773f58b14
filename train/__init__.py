"""train: distilling agent trajectories back into a policy, on TRL 1.16 (see each module's docstring).

- `core/`: the algorithm core as pure torch/numpy functions (masks, advantages incl. GiGPO / ARPO / AEPO,
  PPO-clip losses, branching and tool budgets, diagnostics); `rewards/`: rewards on `agentic_infer.verify`
  with TRL and verl adapters.
- `sft`: `SFTTrainer` on our tokenized rows or messages (LoRA via peft); `dpo`: `DPOTrainer` on preference
  pairs; `grpo/`: `GRPOTrainer` with our engines' multi-turn `rollout_func` and our advantage estimators
  (`agentic train sft|dpo|grpo`); `trainer_args`: the settings checks, TrainingArguments and resume point
  the offline trainers share.
- `model_io`: backend URIs -> trainable models, checkpoints -> HF folder + GGUF; `launch`: accelerate /
  DeepSpeed / FSDP / vLLM-server launch configs; `verl_export`: verl parquet, reward shim, overrides;
  `verl_estimators`: our advantage estimators inside verl; `verl_agent_loop`: our engines as verl's agent loop.
"""
