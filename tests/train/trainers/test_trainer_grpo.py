"""GRPO through TRL 1.16 with our rollout_func on a tiny random model (CPU): observation tokens carry no
gradient, parameters change, our estimators replace TRL's advantages, AEPO's loss runs."""

from __future__ import annotations

import pytest

from tests.train.trainers.conftest import ObservationEngine, tiny_model

torch = pytest.importorskip("torch")
pytest.importorskip("trl")

PROMPTS = [{"prompt": "What is the capital of France?", "answer": "Paris"},
           {"prompt": "What is the capital of Italy?", "answer": "Rome"}]


def id_reward(completions, trajectory, **kw):
    """A reward that differs within a group of random samples: the sum of the sampled ids modulo 7."""
    return [float(sum(i for s in t.segments if s.kind == "model" for i in s.token_ids) % 7) for t in trajectory]


def build(tokenizer, tmp_path, *, estimator=None, engine=ObservationEngine, steps=1, **cfg):
    """A trainer on a tiny random model; with `beta` > 0 the model is saved first, so TRL can load the
    reference model from its folder."""
    from datasets import Dataset
    from trl import GRPOConfig

    from train.grpo.rollout import RolloutFunc
    from train.grpo.trainer import AgenticGRPOTrainer, Estimator

    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), per_device_train_batch_size=4, num_generations=2,
                      max_steps=steps, learning_rate=5e-2, use_cpu=True, report_to="none", logging_steps=1,
                      save_strategy="no", max_completion_length=64, **{"beta": 0.0, **cfg})
    rf = RolloutFunc(lambda llm, seed: engine(llm, seed), tokenizer=tokenizer, seed=0)
    model = tiny_model(tokenizer)
    if args.beta:
        model.save_pretrained(tmp_path / "ref")
        model.config._name_or_path = str(tmp_path / "ref")
    return AgenticGRPOTrainer(model=model, reward_funcs=[id_reward], args=args,
                              train_dataset=Dataset.from_list(PROMPTS * 2), processing_class=tokenizer,
                              rollout_func=rf, estimator=estimator or Estimator())


def batch_of(trainer):
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 1  # set by the training loop; these tests call the steps directly
    inputs = [dict(p) for p in PROMPTS for _ in range(2)]
    return trainer._generate_and_score_completions(inputs)


def logits_grad(trainer, batch):
    """Gradient of TRL's loss w.r.t. the final hidden state that scores each completion token: (B, C, H).

    TRL 1.16 uses transformers' fused LM head (no logits tensor), so the hook sits on the final norm, whose
    output at position p feeds only the LM head's prediction of token p + 1."""
    seen = []
    head = trainer.model.get_decoder().norm

    def keep(_mod, _inp, out):
        out.retain_grad()
        seen.append(out)

    handle = head.register_forward_hook(keep)
    try:
        trainer.model.zero_grad()
        loss = trainer.compute_loss(trainer.model, batch)
        loss.backward()
    finally:
        handle.remove()
    c = batch["completion_ids"].size(1)
    return seen[-1].grad[:, -(c + 1):-1]


def test_observation_tokens_carry_no_gradient(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path)
    batch = batch_of(trainer)
    env = batch["tool_mask"] * batch["completion_mask"]
    assert (batch["tool_mask"] == 0).any(), "the observation must reach TRL as env_mask = 0"
    g = logits_grad(trainer, batch).abs().sum(-1)
    assert g[env == 0].max() == 0  # observation (and padding) positions: zero gradient
    adv = batch["advantages"]
    adv = adv[:, None].expand_as(env) if adv.dim() == 1 else adv
    trained = (env == 1) & (adv.abs() > 0)
    assert trained.any() and (g[trained] > 0).all()


def test_rollout_func_keys_and_alignment(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path)
    batch = batch_of(trainer)
    rf = trainer.rollout_func
    [r] = rf.last_rollouts[:1]
    t = r.trajectories[0]
    view = t.trl_rollout()
    n = len(view["completion_ids"])
    # the first completion row is the first trajectory, ids as recorded (+ a trainable EOS), mask aligned
    row = batch["completion_ids"][0].tolist()
    assert row[:n] == view["completion_ids"] and row[n] == tokenizer.eos_token_id
    assert batch["tool_mask"][0, :n].tolist() == view["env_mask"]
    assert len(rf.last_rollouts) == 4 and rf.timings["engine_s"] > 0


def test_one_step_changes_parameters(tokenizer, tmp_path):
    trainer = build(tokenizer, tmp_path)
    before = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    trainer.train()
    changed = [k for k, v in trainer.model.named_parameters() if not (v.detach() == before[k]).all()]
    assert changed
    logged = {k for h in trainer.state.log_history for k in h}
    assert {"diag/zero_std_share", "diag/reward_mean", "diag/mi", "diag/mi_retrieval_acc"} <= logged


def hand(name: str, a: float, b: float) -> float:
    """The first member's advantage of a group of two rewards (a, b), by each estimator's formula; the
    ObservationEngine records no steps and no branches, so GiGPO is its episode term (mean_norm: a − mean)
    and ARPO plain GRPO."""
    d = (a - b) / 2
    return {"grpo": d / (abs(a - b) / 2 ** 0.5 + 1e-4), "arpo": d / (abs(a - b) / 2 ** 0.5 + 1e-4),
            "dr_grpo": d, "gigpo": d, "rloo": a - b}[name]


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "gigpo", "arpo"])
def test_estimators_supply_advantages(tokenizer, tmp_path, name):
    from train.grpo.trainer import Estimator

    trainer = build(tokenizer, tmp_path, estimator=Estimator(name=name))
    batch = batch_of(trainer)
    r = trainer._last_rewards.sum(1).tolist()
    expect = torch.tensor([v for a, b in zip(r[::2], r[1::2]) for v in (hand(name, a, b), hand(name, b, a))])
    assert expect.abs().sum() > 0
    adv = batch["advantages"]
    if name in ("gigpo", "arpo"):
        assert adv.shape == batch["completion_ids"].shape  # per token
        env = batch["tool_mask"] * batch["completion_mask"]
        assert (adv[env == 0] == 0).all()
        for b in range(adv.size(0)):
            assert adv[b][env[b] == 1].allclose(expect[b].expand(int(env[b].sum())), atol=1e-4)
    else:
        assert adv.shape == (4,)
        assert adv.allclose(expect, atol=1e-4)


@pytest.mark.parametrize("alpha", [0.0, 0.2])
def test_aepo_loss_runs_and_masks(tokenizer, tmp_path, alpha):
    from train.grpo.trainer import Estimator

    trainer = build(tokenizer, tmp_path, estimator=Estimator(name="grpo", aepo_clip=True, aepo_alpha=alpha),
                    num_iterations=2)
    batch = batch_of(trainer)
    env = batch["tool_mask"] * batch["completion_mask"]
    g = logits_grad(trainer, batch).abs().sum(-1)
    assert g[env == 0].max() == 0 and g[env == 1].sum() > 0


def test_train_grpo_with_the_tir_engine(tmp_path, tiny_dir, tokenizer):
    """The command's path: settings -> our TIR engine on the policy's own weights -> one TRL step -> HF folder."""
    import json

    from agentic_infer.config import build_config
    from train.grpo.config import GRPOSettings
    from train.grpo.run import train_grpo

    data = tmp_path / "q.jsonl"
    fuzzed = {"source": "seed-7", "engine": "fuzzqa", "operator": "add_hop", "gates": {"leak": True}}
    rows = [{"question": "1+1?", "answer": "2", "lineage": fuzzed},  # a fuzzqa QA row keeps its lineage on top
            {"question": "2+2?", "answer": "4", "metadata": {"lineage": {"source": "q2", "operator": "gold_demo"}}}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    sft = {"datasets": [{"by_operator": {"coa_linearise": 3}}], "trained_by": "agentic train sft"}
    (tiny_dir / "lineage.json").write_text(json.dumps(sft))  # the start policy's own lineage
    settings = build_config(GRPOSettings, overrides={
        "model": f"hf://{tiny_dir}", "data": str(data), "out": str(tmp_path / "o"), "engine": "tir",
        "engine_config": {"max_turns": 1, "sampling": {"max_tokens": 8}}, "reward": "math", "max_steps": 1,
        "num_generations": 2, "batch_size": 2, "gguf": "none", "estimator": {"name": "dr_grpo"}})
    result = train_grpo(settings)
    assert result["steps"] == 1 and (tmp_path / "o" / "model.safetensors").exists()
    lineage = json.loads((tmp_path / "o" / "lineage.json").read_text())  # the prompts' origins travel with the policy
    [used] = lineage["datasets"]
    assert used["rows"] == used["rows_with_lineage"] == 2 and used["by_operator"] == {"add_hop": 1, "gold_demo": 1}
    assert lineage["base_lineage"] == sft and lineage["trained_by"] == "agentic train grpo"
    assert result["timings"]["engine_s"] > 0
