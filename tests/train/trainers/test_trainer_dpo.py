"""`train.dpo`: preference pairs read with reasons, trained on their own token ids, the chosen completion made
likelier than the rejected one (where DPO's effect lands), the policy saved with its lineage."""

from __future__ import annotations

import json

import pytest

from agentic_infer.errors import ConfigError
from agentic_infer.runner import write_jsonl

pytest.importorskip("trl")


def _pairs(tokenizer) -> list[dict]:
    """Two prompts, each with a chosen and a rejected continuation, as `synth tree-data` writes them."""
    rows = []
    for n, (prompt, chosen, rejected) in enumerate([("Q: 2 + 2 =", " 4", " 5"), ("Q: the sky is", " blue", " green")]):
        rows.append({"prompt": prompt, "chosen": chosen, "rejected": rejected,
                     "prompt_ids": tokenizer.encode(prompt, add_special_tokens=False),
                     "chosen_ids": tokenizer.encode(chosen, add_special_tokens=False),
                     "rejected_ids": tokenizer.encode(rejected, add_special_tokens=False),
                     "metadata": {"lineage": {"source": f"p{n}", "engine": "lats", "operator": "tree_pair"}}})
    return rows


def test_read_pairs_kinds_drops_and_refusals(tmp_path):
    from train.dpo import read_pairs

    ids = {"prompt_ids": [1, 2, 3], "chosen_ids": [4, 5], "rejected_ids": [6]}
    long = {"prompt_ids": [1] * 8, "chosen_ids": [4], "rejected_ids": [6, 7, 8]}  # 8 + 3 = 11 tokens
    rows, kind, too_long = read_pairs(write_jsonl(tmp_path / "a.jsonl", [{**ids, "prompt": "x"}, long]), max_length=10)
    assert (rows, kind, too_long) == ([ids], "ids", 1)  # only the id columns reach the trainer
    text = {"prompt": "p", "chosen": "a", "rejected": "b"}
    assert read_pairs(write_jsonl(tmp_path / "t.jsonl", [text]), max_length=10) == ([text], "text", 0)
    with pytest.raises(ConfigError, match="mixes"):
        read_pairs(write_jsonl(tmp_path / "m.jsonl", [ids, text]), max_length=10)
    with pytest.raises(ConfigError, match=r"s\.jsonl:1: chosen and rejected are the same"):
        read_pairs(write_jsonl(tmp_path / "s.jsonl", [{**ids, "rejected_ids": [4, 5]}]), max_length=10)
    with pytest.raises(ConfigError, match=r"k\.jsonl:2: a record with keys \['prompt'\]"):
        read_pairs(write_jsonl(tmp_path / "k.jsonl", [ids, {"prompt": "p"}]), max_length=10)
    with pytest.raises(ConfigError, match="no pair within max_length=4 \\(2 too long\\)"):
        read_pairs(write_jsonl(tmp_path / "l.jsonl", [ids, long]), max_length=4)


def test_the_trainer_sees_the_pairs_own_ids(tmp_path, tiny_dir, tokenizer):
    """TRL's preparation would tokenize the text again and append EOS to both completions; the pairs' ids reach the
    collator unchanged."""
    from train.dpo import DPOSettings, build_dpo_trainer, read_pairs
    from train.model_io import load_trainable

    data = write_jsonl(tmp_path / "pairs.jsonl", _pairs(tokenizer))
    rows, _, _ = read_pairs(data, max_length=64)
    model, tok = load_trainable(f"hf://{tiny_dir}")
    trainer = build_dpo_trainer(model, tok, rows, DPOSettings(data=str(data), out=str(tmp_path / "o"), max_steps=1,
                                                              gguf="none", precision="fp32", threads=1))
    seen = [{k: trainer.train_dataset[i][k] for k in ("prompt_ids", "chosen_ids", "rejected_ids")}
            for i in range(len(rows))]
    assert seen == rows and all(r["chosen_ids"][-1] != tokenizer.eos_token_id for r in seen)


def test_train_dpo_makes_the_chosen_likelier_than_the_rejected(tmp_path, tiny_dir, tokenizer, capsys):
    """`agentic train dpo` end to end: the log-probability margin chosen - rejected (computed here with the model,
    not read from the trainer) grows on every pair; the checkpoint, policy.gguf, the result and the pairs' lineage
    are written."""
    import torch
    from transformers import AutoModelForCausalLM

    from agentic_infer.cli import main

    pairs = _pairs(tokenizer)
    data = write_jsonl(tmp_path / "pairs.jsonl", pairs)
    out = tmp_path / "dpo"

    def margins(folder) -> list[float]:
        model = AutoModelForCausalLM.from_pretrained(str(folder), torch_dtype=torch.float32).eval()

        def logp(prompt: list[int], completion: list[int]) -> float:
            ids = torch.tensor([prompt + completion])
            with torch.no_grad():
                lp = model(ids).logits[0, :-1].log_softmax(-1)
            return sum(float(lp[len(prompt) - 1 + i, t]) for i, t in enumerate(completion))

        return [logp(p["prompt_ids"], p["chosen_ids"]) - logp(p["prompt_ids"], p["rejected_ids"]) for p in pairs]

    with pytest.raises(SystemExit) as done:
        main(["train", "dpo", "--data", str(data), "--model", f"hf://{tiny_dir}", "--out", str(out), "--max-steps",
              "6", "--set", "learning_rate=1e-3", "--set", "batch_size=2", "--set", "gguf=f32", "--set",
              "precision=fp32", "--set", "threads=1"])
    assert done.value.code == 0
    assert "trained 6 steps on 2 pairs (ids; 0 too long)" in capsys.readouterr().out
    before, after = margins(tiny_dir), margins(out)
    assert all(a > b + 0.1 for a, b in zip(after, before)), (before, after)
    assert (out / "policy.gguf").stat().st_size > 0
    result = json.loads((out / "dpo_result.json").read_text())
    assert result["steps"] == 6 and result["settings"]["beta"] == 0.1 and result["compute"]
    [used] = json.loads((out / "lineage.json").read_text())["datasets"]
    assert used["by_operator"] == {"tree_pair": 2} and used["sources"] == 2
