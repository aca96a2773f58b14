"""`train_grpo(settings)`: GRPO-family RL with our engines' multi-turn rollouts through TRL's GRPOTrainer.

    agentic train grpo --config grpo.yaml --out runs/grpo --max-steps 10

Builds the policy (`train.model_io.load_trainable`), the engine factory (Search-o1 over a BM25 index, TIR
with the Python sandbox, or with `env: NAME` the env agent over that env) generating from the policy's current
weights (`train.grpo.rollout`), a `train.rewards` reward as a TRL reward function (an outcome metric, or the
env's verdict), the rows (questions, or the env's task rows: `read_env_rows`), and `AgenticGRPOTrainer` with the chosen
estimator; saves the HF checkpoint and `policy.gguf` into `out` (precision and torch threads resolved once by
`train.precision`, recorded under `compute` in `grpo_result.json`). On a GPU pass TRL's vLLM settings in
`trl` (`use_vllm: true, vllm_mode: server`) and see `train.launch` for multi-GPU launch commands.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from agentic_infer.runner import iter_jsonl
from train.grpo.config import REWARDS, GRPOSettings, custom_reward
from train.grpo.rollout import EngineFactory, RolloutFunc, prompt_to_example, task_row_example
from train.precision import Compute, Precision, resolve_compute, resolve_precision

log = logging.getLogger(__name__)


def engine_factory(settings: GRPOSettings) -> EngineFactory:
    """(llm, seed) -> a fresh engine of `settings.engine` (`agentic_infer.engines.registry.seeded_factory`); with
    `env`, the env agent over that env."""
    from agentic_infer.engines.registry import seeded_factory

    config = dict(settings.engine_config)
    if settings.env:
        config.update(env=settings.env, env_options=dict(settings.env_options))
    return seeded_factory(settings.engine, config, index=settings.index)


def reward_function(settings: GRPOSettings) -> Any:
    from train.rewards import env, outcome
    from train.rewards.adapters import trl_reward

    if settings.reward not in REWARDS:
        fn = custom_reward(settings.reward)
    else:
        fn = env.env_reward if settings.reward == "env" else getattr(outcome, f"{settings.reward}_reward")
    return trl_reward(fn, name=settings.reward, **settings.reward_options)


def read_examples(path: str) -> list[dict[str, Any]]:
    """TRL rows from a JSONL of examples: `prompt` is the question; every other column reaches the rewards."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"data {path!r}: no such file; write a JSONL of {{'question', 'answer'}} records")
    rows = []
    for n, d in iter_jsonl(p, "one {'question', 'answer'} record a line"):
        if "question" not in d and "prompt" not in d:
            raise ConfigError(f"{p}:{n}: needs 'question' (or 'prompt')")
        rows.append({"prompt": d.get("prompt", d.get("question")), **{k: v for k, v in d.items() if k != "prompt"}})
    return rows


def read_env_rows(settings: GRPOSettings) -> list[dict[str, Any]]:
    """TRL rows of `settings.env`'s task rows: from `data` (a JSONL of task rows), else the env's shipped task
    files (`EnvSpec.default_files`, under the shared data folder). `prompt` is the row's JSON text
    (`train.grpo.rollout.task_row_prompt`; a row without "id" gets FILE:LINE), `env_task_id` its id."""
    from agentic_infer.envs.registry import get_env_spec
    from agentic_infer.tools.retrieval.recipes import shared_data_dir
    from train.grpo.rollout import task_row_prompt

    spec = get_env_spec(settings.env)
    files = [Path(settings.data).expanduser()] if settings.data else [shared_data_dir() / f for f in spec.default_files]
    if not files:
        raise ConfigError(f"env {spec.name!r} ships no task file: set data: TASKS.jsonl ({spec.task_format})")
    rows = []
    for p in files:
        if not p.is_file():
            raise ConfigError(f"env {spec.name!r} task file {str(p)!r}: no such file; set data: TASKS.jsonl "
                              f"({spec.task_format})")
        for n, d in iter_jsonl(p, f"one task row a line: {spec.task_format}"):
            row = {"id": str(d.get("id", f"{p.stem}:{n}")), **{k: v for k, v in d.items() if k != "id"}}
            rows.append({"prompt": task_row_prompt(row), "env_task_id": row["id"]})
    return rows


def rollout_func_for(settings: GRPOSettings, tokenizer: Any, factory: EngineFactory | None = None) -> RolloutFunc:
    """The `RolloutFunc` of these settings (the synchronous and the async trainer both generate through it)."""
    return RolloutFunc(factory or engine_factory(settings), tokenizer=tokenizer, append_eos=settings.append_eos,
                       max_completion_length=settings.max_completion_length, allow_inexact=settings.allow_inexact,
                       seed=settings.seed, branching=settings.branching, branching_options=settings.branching_config,
                       example_for=task_row_example if settings.env else prompt_to_example,
                       rollout_batch=settings.rollout_batch)


def build_grpo_trainer(settings: GRPOSettings, model: Any, tokenizer: Any, rows: list[dict[str, Any]], *,
                       factory: EngineFactory | None = None, reward_funcs: list | None = None,
                       precision: Precision | None = None) -> Any:
    """`AgenticGRPOTrainer` for these settings; `precision`: the run's resolved one (default: `settings.precision`
    resolved here), TRL's bf16/fp16 flags set from it."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from train.grpo.trainer import AgenticGRPOTrainer

    kw: dict[str, Any] = dict(
        output_dir=str(Path(settings.out) / "trainer"), per_device_train_batch_size=settings.batch_size,
        num_generations=settings.num_generations, max_steps=settings.max_steps, learning_rate=settings.learning_rate,
        max_completion_length=settings.max_completion_length, seed=settings.seed, logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=not torch.cuda.is_available(), beta=0.0,
        **(precision or resolve_precision(settings.precision)).trl_args())
    kw.update(settings.trl)
    rf = rollout_func_for(settings, tokenizer, factory)
    return AgenticGRPOTrainer(model=model, reward_funcs=reward_funcs or [reward_function(settings)],
                              args=GRPOConfig(**kw), train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                              rollout_func=rf, estimator=settings.estimator, mi_every=settings.mi_every)


def train_grpo(settings: GRPOSettings, *, compute: Compute | None = None) -> dict[str, Any]:
    """Train, save the HF checkpoint (and GGUF) into `settings.out`; `compute`: precision and threads already
    resolved by a caller (default: resolved here, once)."""
    from train.model_io import load_trainable, save_trained

    if not settings.data and not settings.env:
        raise ConfigError("no training data: set data: questions.jsonl in the config (or --set data=...)")
    compute = compute or resolve_compute(settings.precision, settings.threads)
    compute.apply()
    if settings.async_staleness >= 0:  # TRL's AsyncGRPOTrainer, a rollout worker thread beside it
        from train.grpo.async_trl import train_grpo_async

        result = train_grpo_async(settings, compute)
        _write_result(settings, result)
        return result
    model, tokenizer = load_trainable(settings.model)
    rows = read_env_rows(settings) if settings.env else read_examples(settings.data)
    trainer = build_grpo_trainer(settings, model, tokenizer, rows, precision=compute.precision)
    out = trainer.train()
    dest, gguf, main = save_trained(trainer, tokenizer, settings.out, gguf=settings.gguf)  # rank 0 saves
    result = {"out": str(dest), "gguf": gguf, "steps": int(out.global_step), "log_history": trainer.state.log_history,
              "timings": trainer.rollout_func.timings, "compute": compute.record(),
              "processes": int(trainer.args.world_size)}
    if main:
        _write_result(settings, result)
    trainer.accelerator.wait_for_everyone()
    return result


def data_lineage(settings: GRPOSettings) -> dict[str, Any]:
    """The origins of the prompts GRPO trained on: the data file's (`file_lineage`), or the env's shipped tasks."""
    from agentic_infer.lineage import file_lineage

    return file_lineage(settings.data) if settings.data else {"data": f"env {settings.env}: its shipped task files"}


def _write_result(settings: GRPOSettings, result: dict[str, Any]) -> None:
    """grpo_result.json and lineage.json (the prompts' origins and the start policy's own lineage) in the out folder."""
    from agentic_infer.lineage import write_policy_lineage

    result["data_lineage"] = data_lineage(settings)
    write_policy_lineage(result["out"], [result["data_lineage"]], trained_by="agentic train grpo",
                         base_model=settings.model)
    (Path(result["out"]) / "grpo_result.json").write_text(json.dumps({"settings": asdict(settings), **result},
                                                                     indent=2, default=str))
