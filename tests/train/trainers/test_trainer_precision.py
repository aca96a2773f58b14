"""Where `precision` lands: the dtype a linear layer computes in during real TRL SFT and GRPO training steps on the
tiny random model (fp32 weights in every mode; bf16 autocast only with precision=bf16), and what a run records."""

from __future__ import annotations

import json

import pytest

from tests.train.trainers.conftest import ObservationEngine, tiny_model

pytest.importorskip("trl")


def record_training_dtypes(model) -> tuple[set, object]:
    """The output dtypes of the first MLP's down projection in forwards that build a graph (training passes,
    not the rollouts' or TRL's no-grad scoring passes)."""
    import torch

    seen: set = set()

    def keep(_mod, _inp, out):
        if torch.is_grad_enabled():
            seen.add(out.dtype)

    return seen, model.get_decoder().layers[0].mlp.down_proj.register_forward_hook(keep)


def expected(precision):
    import torch

    return {"fp32": {torch.float32}, "bf16": {torch.bfloat16}}[precision]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_sft_step_computes_in_the_set_precision(tmp_path, tokenizer, traj_factory, precision):
    import torch

    from train.core.masks import sft_row
    from train.sft import SFTSettings, build_sft_trainer

    row = sft_row(traj_factory("Capital?", [("model", "I search."), ("observation", " <r>Paris</r> "),
                                            ("model", "Paris.")]))
    settings = SFTSettings(out=str(tmp_path), max_steps=1, precision=precision)
    trainer = build_sft_trainer(tiny_model(tokenizer), tokenizer, [row], settings, output_dir=str(tmp_path / "t"))
    seen = train_recording_dtypes(trainer)
    assert seen == expected(precision)
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}  # master weights stay fp32


def train_recording_dtypes(trainer):
    """Train, recording the dtypes a linear layer computed in (see `record_training_dtypes`)."""
    seen, handle = record_training_dtypes(trainer.model)
    try:
        trainer.train()
    finally:
        handle.remove()
    return seen


def id_reward(completions, trajectory, **kw):
    return [float(sum(i for s in t.segments if s.kind == "model" for i in s.token_ids) % 7) for t in trajectory]


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_grpo_step_computes_in_the_set_precision(tmp_path, tokenizer, precision):
    import torch

    from train.grpo.config import GRPOSettings
    from train.grpo.run import build_grpo_trainer

    settings = GRPOSettings(out=str(tmp_path / "o"), num_generations=2, batch_size=2, max_steps=1,
                            max_completion_length=64, precision=precision)
    prompts = [{"prompt": "What is the capital of France?", "answer": "Paris"}] * 2
    trainer = build_grpo_trainer(settings, tiny_model(tokenizer), tokenizer, prompts,
                                 factory=lambda llm, seed: ObservationEngine(llm, seed), reward_funcs=[id_reward])
    seen = train_recording_dtypes(trainer)
    assert seen == expected(precision)
    assert {p.dtype for p in trainer.model.parameters()} == {torch.float32}


def test_train_sft_records_the_resolved_precision_and_threads(tmp_path, tiny_dir, traj_factory):
    from train.sft import SFTSettings, train_sft

    data = tmp_path / "d.jsonl"
    data.write_text(traj_factory("Q?", [("model", "A.")]).to_json() + "\n")
    result = train_sft(SFTSettings(model=f"hf://{tiny_dir}", data=str(data), out=str(tmp_path / "o"), max_steps=1,
                                   gguf="none", precision="fp32", threads=1))
    record = {"precision": "fp32", "precision_reason": "set", "threads": 1, "threads_reason": "set"}
    assert result.compute == record
    saved = json.loads((tmp_path / "o" / "sft_result.json").read_text())
    assert saved["compute"] == record and saved["settings"]["precision"] == "fp32"
