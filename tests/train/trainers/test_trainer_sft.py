"""SFT through TRL 1.16 on our rows (tiny random model, CPU): data reading, zero loss on observation tokens,
the end-to-end command path (HF checkpoint + GGUF whose greedy output matches the HF model's)."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

pytest.importorskip("trl")


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_read_sft_data_kinds_and_masks(tmp_path, tokenizer, traj_factory):
    from agentic_infer.errors import ConfigError
    from agentic_infer.types import Rollout
    from train.sft import read_sft_data

    t = traj_factory("Capital of France?", [("model", "Let me search."), ("observation", " <r>Paris</r> "),
                                            ("model", "Paris.")])
    r = Rollout(example_id="q1", trajectories=[traj_factory("Q?", [("model", "A.")]), t], chosen=1)
    rows, kind = read_sft_data(write_jsonl(tmp_path / "d.jsonl", [t.to_dict(), r.to_dict()]), tokenizer,
                               append_eos="finished")
    assert kind == "tokens" and len(rows) == 2 and rows[0] == rows[1]  # the rollout's chosen trajectory
    row = rows[0]
    mask = t.loss_mask() + [1]  # + the trainable end-of-turn token
    assert row["input_ids"] == t.token_ids() + [tokenizer.eos_token_id]
    assert [x != -100 for x in row["labels"]] == [bool(m) for m in mask]
    inexact = traj_factory("Q?", [("model", "A.")], exact=False)
    with pytest.raises(ConfigError, match="token_exact=False"):
        read_sft_data(write_jsonl(tmp_path / "i.jsonl", [inexact.to_dict()]), tokenizer)
    rows, _ = read_sft_data(tmp_path / "i.jsonl", tokenizer, allow_inexact=True)
    assert len(rows) == 1
    tok_rows, kind = read_sft_data(write_jsonl(tmp_path / "t.jsonl", [{"input_ids": [1, 2, 3], "labels": [-100, 2, 3]}]),
                                   tokenizer)
    assert kind == "tokens" and tok_rows[0]["labels"] == [-100, 2, 3]
    with pytest.raises(ConfigError, match="mixes"):
        read_sft_data(write_jsonl(tmp_path / "m.jsonl", [{"input_ids": [1]}, {"messages": []}]), tokenizer)


def test_observation_tokens_carry_no_gradient(tmp_path, tokenizer, traj_factory):
    """Through TRL's own collator and loss: the hidden state scoring an observation token gets no gradient,
    and perturbing the observation's ids at the end of a row changes no parameter gradient."""
    import torch

    from tests.train.trainers.conftest import tiny_model
    from train.core.masks import sft_row
    from train.sft import SFTSettings, build_sft_trainer

    def row_for(obs):
        t = traj_factory("Capital?", [("model", "I search."), ("observation", " <r>Paris is big</r> "),
                                      ("model", "Paris."), ("observation", obs)], finish="max_turns")
        return sft_row(t)

    a, b = row_for(" the end"), row_for(" the cat")
    assert len(a["input_ids"]) == len(b["input_ids"]) and a["input_ids"] != b["input_ids"]
    trainer = build_sft_trainer(tiny_model(tokenizer), tokenizer, [a], SFTSettings(out=str(tmp_path)),
                                output_dir=str(tmp_path / "t"))
    model = trainer.model

    def grads(row):
        seen = []

        def keep(_mod, _inp, out):  # returns None: the output is kept as it is
            out.retain_grad()
            seen.append(out)

        handle = model.get_decoder().norm.register_forward_hook(keep)
        model.zero_grad()
        batch = trainer.data_collator([row])
        try:
            trainer.compute_loss(model, batch).backward()
        finally:
            handle.remove()
        return seen[-1].grad[0].abs().sum(-1), [p.grad.clone() for p in model.parameters()]

    h, ga = grads(a)
    labels = torch.tensor(a["labels"])
    scored_by = labels[1:] != -100  # hidden state at p scores token p + 1
    assert (h[:-1][~scored_by] == 0).all() and (h[:-1][scored_by] > 0).all() and h[-1] == 0
    _, gb = grads(b)
    assert all(torch.equal(x, y) for x, y in zip(ga, gb))


def test_train_sft_end_to_end_gguf_round_trip(tmp_path, tiny_dir, tokenizer, traj_factory):
    """`train_sft` from an hf:// URI: parameters change, the HF folder and policy.gguf serve the same greedy
    tokens (llama.cpp vs transformers) after training on one row until it is memorised."""
    pytest.importorskip("llama_cpp")
    import torch
    from transformers import AutoModelForCausalLM

    from agentic_infer.backends import load_llm
    from agentic_infer.config import build_config
    from agentic_infer.types import Message, SamplingParams
    from train.sft import SFTSettings, train_sft

    t = traj_factory("What is the capital of France?", [("model", "The capital of France is Paris.")])
    t.metadata["lineage"] = {"source": "q1", "engine": "chain-of-agents/teacher-free", "operator": "coa_linearise"}
    data = write_jsonl(tmp_path / "d.jsonl", [t.to_dict()])
    out = tmp_path / "out"
    settings = build_config(SFTSettings, overrides={"model": f"hf://{tiny_dir}", "data": str(data), "out": str(out),
                                                    "max_steps": 40, "learning_rate": 3e-2, "gguf": "f32"})
    result = train_sft(settings)
    lineage = json.loads((out / "lineage.json").read_text())  # the data's origins travel with the policy
    [used] = lineage["datasets"]
    assert used["by_operator"] == {"coa_linearise": 1} and used["sources"] == 1 and used == result.data_lineage
    assert used["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()
    assert result.steps == 40 and result.gguf == str(out / "policy.gguf") and (out / "sft_result.json").exists()
    before = AutoModelForCausalLM.from_pretrained(str(tiny_dir)).state_dict()
    after = AutoModelForCausalLM.from_pretrained(str(out)).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    hf = load_llm(f"hf://{out}?device=cpu&dtype=float32")
    gg = load_llm(f"llamacpp://{out / 'policy.gguf'}?n_ctx=256")
    prompt = hf.render([Message("user", "What is the capital of France?")])
    params = SamplingParams(max_tokens=10, temperature=0)
    [a] = asyncio.run(hf.generate(prompt, params))
    [b] = asyncio.run(gg.generate(prompt, params))
    assert a.token_ids == b.token_ids and "Paris" in a.text  # learned, and the GGUF serves the same policy
    from eval.summary import model_info  # what an eval run of the GGUF records about it

    assert model_info(gg, f"llamacpp://{out / 'policy.gguf'}")["lineage"] == lineage
    assert model_info(hf, f"hf://{out}")["lineage"] == lineage  # and of the checkpoint, run on transformers


def test_lora_is_merged_before_saving(tmp_path, tiny_dir, tokenizer, traj_factory):
    from agentic_infer.config import build_config
    from train.sft import SFTSettings, train_sft

    t = traj_factory("Q?", [("model", "An answer.")])
    data = write_jsonl(tmp_path / "d.jsonl", [t.to_dict()])
    settings = build_config(SFTSettings, overrides={"model": f"hf://{tiny_dir}", "data": str(data),
                                                    "out": str(tmp_path / "o"), "max_steps": 2, "lora": True,
                                                    "learning_rate": 1e-2, "gguf": "none"})
    result = train_sft(settings)
    files = {p.name for p in (tmp_path / "o").iterdir()}
    assert result.gguf is None and "model.safetensors" in files and "adapter_config.json" not in files


@pytest.mark.slow
def test_embedded_model_sft_to_gguf(tmp_path, traj_factory):
    """The real path: llamacpp://default (dequantised into transformers), 2 LoRA steps, f16 GGUF; the GGUF's
    greedy output matches the saved HF model's on a prompt."""
    pytest.importorskip("llama_cpp")
    from agentic_infer.backends import load_llm
    from agentic_infer.config import build_config
    from agentic_infer.types import Message, SamplingParams
    from train.sft import SFTSettings, train_sft

    t = traj_factory("What is 2 + 2?", [("model", "2 + 2 = 4.")])
    data = write_jsonl(tmp_path / "d.jsonl", [t.to_dict()])
    out = tmp_path / "out"
    train_sft(build_config(SFTSettings, overrides={"model": "llamacpp://default", "data": str(data),
                                                   "out": str(out), "max_steps": 2, "lora": True}))
    hf = load_llm(f"hf://{out}?device=cpu&dtype=float32")
    gg = load_llm(f"llamacpp://{out / 'policy.gguf'}?n_ctx=512")
    prompt = hf.render([Message("user", "What is the capital of France?")])
    params = SamplingParams(max_tokens=8, temperature=0)
    [a] = asyncio.run(hf.generate(prompt, params))
    [b] = asyncio.run(gg.generate(prompt, params))
    assert a.token_ids == b.token_ids


def test_a_stopped_sft_run_resumes_from_its_last_checkpoint(tmp_path, tiny_dir, traj_factory, monkeypatch):
    """2 of 4 steps with a checkpoint every 2, then the 4-step run in the same folder: it continues at step 2
    and runs only the 2 missing optimizer steps (counted where the trainer runs them)."""
    from trl import SFTTrainer

    from agentic_infer.config import build_config
    from train.sft import SFTSettings, train_sft

    t = traj_factory("What is the capital of France?", [("model", "The capital of France is Paris.")])
    data = write_jsonl(tmp_path / "d.jsonl", [t.to_dict()])
    calls: list[int] = []
    real = SFTTrainer.training_step
    monkeypatch.setattr(SFTTrainer, "training_step", lambda self, *a, **k: (calls.append(1), real(self, *a, **k))[1])
    base = {"model": f"hf://{tiny_dir}", "data": str(data), "out": str(tmp_path / "out"), "gguf": "none",
            "save_steps": 2}
    first = train_sft(build_config(SFTSettings, overrides={**base, "max_steps": 2}))
    assert first.resumed_from is None and len(calls) == 2
    calls.clear()
    second = train_sft(build_config(SFTSettings, overrides={**base, "max_steps": 4}))
    assert second.resumed_from and second.resumed_from.endswith("checkpoint-2")
    assert second.steps == 4 and len(calls) == 2
    assert [h["step"] for h in second.history] == [1.0, 2.0, 3.0, 4.0]  # the curve keeps the first run's steps
