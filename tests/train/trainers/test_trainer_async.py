"""Async GRPO (train.grpo.async_trl): TRL 1.16's AsyncGRPOTrainer on CPU, fed by our engines' rollouts from a worker
thread. The worker's samples mask the observations and carry old log-probs equal to the trainer's own (ratio 1 at
equal weights, KL 0), the policy trains, and the pushed weights reach the generation model."""

from __future__ import annotations

import json

import pytest

from agentic_infer.errors import ConfigError
from tests.train.trainers.conftest import ObservationEngine, tiny_model
from tests.train.trainers.test_trainer_grpo import PROMPTS, id_reward

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


def _settings(tmp_path, **kw):
    from train.grpo.config import GRPOSettings

    return GRPOSettings(**{"data": "unused.jsonl", "out": str(tmp_path / "out"), "num_generations": 2,
                           "batch_size": 4, "max_steps": 3, "learning_rate": 5e-2, "max_completion_length": 64,
                           "async_staleness": 1, "precision": "fp32", **kw})


def _trainer(tokenizer, tmp_path, **kw):
    from train.grpo.async_trl import build_async_trainer
    from train.precision import resolve_precision

    settings = _settings(tmp_path, **kw)
    return build_async_trainer(settings, tiny_model(tokenizer), tokenizer, PROMPTS * 2,
                               precision=resolve_precision("fp32"), reward_funcs=[id_reward],
                               factory=lambda llm, seed: ObservationEngine(llm, seed))


def test_the_workers_samples_mask_observations_and_hold_the_trainers_logprobs(tokenizer, tmp_path):
    trainer = _trainer(tokenizer, tmp_path)
    worker = trainer.rollout_worker
    samples, metrics = worker.rollout(worker._prompts(), version=0)
    assert len(samples) == 4 and metrics["rollout/samples_total"] == 4
    obs = tokenizer.encode(ObservationEngine.observation, add_special_tokens=False)
    for s in samples:
        ids, mask = s.input_ids.tolist(), s.completion_mask.tolist()
        start = next(i for i in range(len(ids)) if ids[i:i + len(obs)] == obs and mask[i] == 0)
        assert mask[start:start + len(obs)] == [0] * len(obs)  # the observation is context, not trained
        assert sum(mask) > 0 and ids[-1] == tokenizer.eos_token_id and mask[-1] == 1  # the appended end of turn
        assert (s.old_log_probs[[i for i, m in enumerate(mask) if not m]] == 0).all()
        assert (s.old_log_probs[[i for i, m in enumerate(mask) if m]] < 0).all()
    rewards = [s.metrics["reward"] for s in samples]
    adv = [s.advantage for s in samples]
    for g in (0, 2):  # GRPO within each group of 2: (r - mean) / (std + 1e-4), by hand
        a, b = rewards[g:g + 2]
        std = abs(a - b) / 2 ** 0.5
        assert adv[g] == pytest.approx((a - (a + b) / 2) / (std + 1e-4), rel=1e-5)


def test_async_grpo_trains_and_pushes_its_weights_to_the_worker(tokenizer, tmp_path):
    trainer = _trainer(tokenizer, tmp_path)
    worker = trainer.rollout_worker
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 3
    first = logs[0]  # its samples were generated with the weights it trains (version 1, the first push)
    assert first["ratio"] == pytest.approx(1.0, abs=1e-4) and abs(first["kl"]) < 1e-5, first
    after = dict(trainer.model.named_parameters())
    assert max((after[n].detach() - before[n]).abs().max().item() for n in before) > 0
    gen = dict(worker.model.named_parameters())
    assert max((gen[n].detach() - after[n].detach()).abs().max().item() for n in after) == 0  # the last push landed
    assert worker.loaded_version == trainer.model_version >= 3 and worker.produced >= 12


def test_async_settings_refuse_what_the_async_trainer_cannot_train(tmp_path):
    from train.grpo.config import GRPOSettings
    from train.grpo.trainer import Estimator

    with pytest.raises(ConfigError, match="one advantage each"):
        GRPOSettings(data="x", async_staleness=1, estimator=Estimator(name="gigpo"))
    with pytest.raises(ConfigError, match="async_staleness=-2"):
        GRPOSettings(data="x", async_staleness=-2)
    with pytest.raises(ConfigError, match="branching"):
        GRPOSettings(data="x", async_staleness=0, branching="arpo")
    assert json.dumps(GRPOSettings(data="x").async_staleness) == "-1"  # the synchronous trainer by default
