"""`train_grpo(settings)`: GRPO-family RL with our engines' multi-turn rollouts through TRL's GRPOTrainer.

    agentic train grpo --config grpo.yaml --out runs/grpo --max-steps 10

Builds the policy (`train.model_io.load_trainable`), the engine factory (Search-o1 over a BM25 index, or
TIR with the Python sandbox) generating from the policy's current weights (`train.grpo.rollout`), a
`train.rewards` outcome reward as a TRL reward function, and `AgenticGRPOTrainer` with the chosen
estimator; saves the HF checkpoint and `policy.gguf` into `out`. On a GPU pass TRL's vLLM settings in
`trl` (`use_vllm: true, vllm_mode: server`) and see `train.launch` for multi-GPU launch commands.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentic_infer.errors import ConfigError
from train.grpo.config import GRPOSettings
from train.grpo.rollout import EngineFactory, RolloutFunc

log = logging.getLogger(__name__)


def engine_factory(settings: GRPOSettings) -> EngineFactory:
    """(llm, seed) -> a fresh engine of `settings.engine`, its sampling seeded per episode."""
    from agentic_infer.config import build_config

    if settings.engine == "search_o1":
        from agentic_infer.engines.search_o1 import SearchO1, SearchO1Config
        from agentic_infer.tools.retrieval.default_index import ensure_default_index
        from agentic_infer.tools.retrieval.index import load_index

        cfg = build_config(SearchO1Config, overrides=settings.engine_config, source="engine_config")
        retriever = load_index(settings.index or ensure_default_index(None))
        return lambda llm, seed: SearchO1(llm, retriever, cfg, sampling=cfg.sampling.replace(seed=seed))
    from agentic_infer.engines.tir import TIR, TIRConfig
    from agentic_infer.tools.sandbox import PythonSandbox

    cfg = build_config(TIRConfig, overrides=settings.engine_config, source="engine_config")
    sandbox = PythonSandbox(timeout_s=10)
    return lambda llm, seed: TIR(llm, sandbox, cfg, sampling=cfg.sampling.replace(seed=seed))


def reward_function(settings: GRPOSettings) -> Any:
    from train.rewards import outcome
    from train.rewards.adapters import trl_reward

    fn = getattr(outcome, f"{settings.reward}_reward")
    return trl_reward(fn, name=settings.reward, **settings.reward_options)


def read_examples(path: str) -> list[dict[str, Any]]:
    """TRL rows from a JSONL of examples: `prompt` is the question; every other column reaches the rewards."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"data {path!r}: no such file; write a JSONL of {{'question', 'answer'}} records")
    rows = []
    for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            d = json.loads(line)
            if "question" not in d and "prompt" not in d:
                raise ConfigError(f"{p}:{n}: needs 'question' (or 'prompt')")
            rows.append({"prompt": d.get("prompt", d.get("question")), **{k: v for k, v in d.items() if k != "prompt"}})
    return rows


def build_grpo_trainer(settings: GRPOSettings, model: Any, tokenizer: Any, rows: list[dict[str, Any]], *,
                       factory: EngineFactory | None = None, reward_funcs: list | None = None) -> Any:
    import torch
    from datasets import Dataset
    from trl import GRPOConfig

    from train.grpo.trainer import AgenticGRPOTrainer

    kw: dict[str, Any] = dict(
        output_dir=str(Path(settings.out) / "trainer"), per_device_train_batch_size=settings.batch_size,
        num_generations=settings.num_generations, max_steps=settings.max_steps, learning_rate=settings.learning_rate,
        max_completion_length=settings.max_completion_length, seed=settings.seed, logging_steps=1,
        save_strategy="no", report_to="none", use_cpu=not torch.cuda.is_available(), beta=0.0)
    kw.update(settings.trl)
    rf = RolloutFunc(factory or engine_factory(settings), tokenizer=tokenizer, append_eos=settings.append_eos,
                     max_completion_length=settings.max_completion_length, allow_inexact=settings.allow_inexact,
                     seed=settings.seed, branching=settings.branching, branching_options=settings.branching_config)
    return AgenticGRPOTrainer(model=model, reward_funcs=reward_funcs or [reward_function(settings)],
                              args=GRPOConfig(**kw), train_dataset=Dataset.from_list(rows), processing_class=tokenizer,
                              rollout_func=rf, estimator=settings.estimator)


def train_grpo(settings: GRPOSettings) -> dict[str, Any]:
    from train.model_io import export_gguf, load_trainable, save_checkpoint

    if not settings.data:
        raise ConfigError("no training data: set data: questions.jsonl in the config (or --set data=...)")
    model, tokenizer = load_trainable(settings.model, dtype=settings.dtype)
    trainer = build_grpo_trainer(settings, model, tokenizer, read_examples(settings.data))
    out = trainer.train()
    dest = save_checkpoint(trainer.model, tokenizer, settings.out)
    gguf = None if settings.gguf == "none" else str(export_gguf(dest, dest / "policy.gguf", outtype=settings.gguf))
    result = {"out": str(dest), "gguf": gguf, "steps": int(out.global_step), "log_history": trainer.state.log_history,
              "timings": trainer.rollout_func.timings}
    (dest / "grpo_result.json").write_text(json.dumps({"settings": asdict(settings), **result}, indent=2, default=str))
    return result
