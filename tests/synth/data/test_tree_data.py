"""Search trees as training data (synth/trees.py, `agentic synth tree-data`): LATS and RAP searches of the Game of 24
(FakeLLM policies that solve it), their chosen path as per-step SFT trajectories and their siblings as DPO pairs.

Checked against what the LLM was really sent and really wrote (FakeLLM records every prompt; its tokenizer gives
the ids), and against the node table of the search itself (`search.tree`, not the rollout the function reads)."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "agentic_infer" / "engines" / "tree"))
from tree_fakes import Game24Policy, Game24RAPPolicy, searched  # noqa: E402

from agentic_infer.cli import main  # noqa: E402
from agentic_infer.engines.tree import LATS, RAP, Game24LATSEnv, Game24RAPTask  # noqa: E402
from agentic_infer.errors import ConfigError  # noqa: E402
from agentic_infer.runner import write_jsonl  # noqa: E402
from agentic_infer.testing import FakeLLM  # noqa: E402
from agentic_infer.types import Rollout  # noqa: E402
from synth.export import export_rows, read_trajectories  # noqa: E402
from synth.trees import read_rollouts, tree_data  # noqa: E402

PUZZLE = {"id": "p1", "question": "1 1 4 6"}


def lats(llm):
    return LATS(llm, lambda ex: Game24LATSEnv(ex["question"]), iterations=12, n_children=3, sampling={"seed": 0})


def rap(llm):
    return RAP(llm, lambda ex: Game24RAPTask(ex["question"]), iterations=10, n_actions=3)


ENGINES = [pytest.param(lats, Game24Policy, id="lats"), pytest.param(rap, Game24RAPPolicy, id="rap")]


async def _search(make, policy):
    llm = FakeLLM(policy())
    rollout, tree = await searched(make(llm), PUZZLE)
    return Rollout.from_json(rollout.to_json()), tree, llm  # what read_rollouts gives back


def _score(node) -> float | None:
    """Hand rule of the module docstring, on the search's own Node objects."""
    return node.value if node.visits else node.reward


@pytest.mark.parametrize("make, policy", ENGINES)
async def test_path_steps_are_the_sampled_ids_of_the_proposing_calls(make, policy):
    rollout, tree, llm = await _search(make, policy)
    assert rollout.rewards["correct"] == 1.0
    path = tree.path(tree[rollout.metadata["tree"]["node"]])[1:]
    data = tree_data([rollout])
    assert [t.metadata["node"] for t in data.sft] == [n.id for n in path] and len(path) >= 2
    for t, node in zip(data.sft, path):
        prompt, model = t.segments
        assert prompt.text in llm.prompts and prompt.token_ids == llm.tokenizer.encode(prompt.text)
        assert model.token_ids == llm.tokenizer.encode(model.text)
        assert node.action in model.text and t.token_exact and t.group_id == "p1"
        assert t.metadata["lineage"] == {"source": "p1", "engine": rollout.engine, "operator": "tree_path",
                                         "node": node.id, "parents": node.details["proposed_by"][:1], "backend": None}
    rows = export_rows(data.sft, "tokenized", append_eos=None)  # the export every SFT dataset goes through
    assert [r["input_ids"] for r in rows] == [t.segments[0].token_ids + t.segments[1].token_ids for t in data.sft]


@pytest.mark.parametrize("make, policy", ENGINES)
@pytest.mark.parametrize("scope", ["path", "tree"])
async def test_pairs_are_siblings_scored_lower_and_every_sibling_is_accounted_for(make, policy, scope):
    rollout, tree, llm = await _search(make, policy)
    data = tree_data([rollout], scope=scope)
    pairs = [d for d in data.dropped if d["kind"] == "pair"]
    assert data.pairs
    for row in data.pairs:
        good, bad = tree[row["chosen_node"]], tree[row["rejected_node"]]
        assert good.parent == bad.parent == row["parent"] and good.id != bad.id
        assert _score(good) > _score(bad) and row["chosen_score"] == _score(good)
        assert row["prompt"] in llm.prompts and row["prompt_ids"] == llm.tokenizer.encode(row["prompt"])
        assert good.action in row["chosen"] and bad.action in row["rejected"]
        assert row["chosen_ids"] == llm.tokenizer.encode(row["chosen"])
        assert row["rejected_ids"] == llm.tokenizer.encode(row["rejected"])
    # every sibling of every preferred child is a pair or a drop with a reason
    if scope == "path":
        preferred = tree.path(tree[rollout.metadata["tree"]["node"]])[1:]
        assert all(tree[r["chosen_node"]] in preferred for r in data.pairs)
    else:
        preferred = [max((c for c in tree.children(n) if _score(c) is not None), key=lambda c: (_score(c), -c.id))
                     for n in tree.nodes if sum(_score(c) is not None for c in tree.children(n)) >= 2]
    siblings = sum(len(tree.children(tree[n.parent])) - 1 for n in preferred)
    assert len(data.pairs) + len(pairs) == siblings
    assert {d["reason"] for d in pairs} <= {"tie", "unscored", "sibling_scored_higher"}


async def test_drops_carry_reasons():
    rollout, tree, _ = await _search(lats, Game24Policy)
    wrong = Rollout.from_json(rollout.to_json())
    wrong.rewards["correct"] = 0.0
    assert tree_data([wrong]).sft == [] and tree_data([wrong]).stats["dropped"]["sft/path_incorrect"] == 1
    assert len(tree_data([wrong], keep_incorrect=True).sft) == len(tree_data([rollout]).sft)
    unverified = Rollout.from_json(rollout.to_json())
    del unverified.rewards["correct"]
    assert tree_data([unverified]).stats["dropped"]["sft/path_unverified"] == 1
    wide = tree_data([rollout], margin=10.0)
    assert wide.pairs == [] and wide.stats["dropped"]["pair/below_margin"] == len(tree_data([rollout]).pairs)
    pair = tree_data([rollout]).pairs[0]  # a sibling sampled from another prompt is no preference pair
    other = Rollout.from_json(rollout.to_json())
    call = next(t for t in other.trajectories[1:] if t.id == pair["metadata"]["lineage"]["parents"][1])
    call.segments[0].token_ids = call.segments[0].token_ids + [7]
    moved = tree_data([other])
    assert pair["id"] not in [p["id"] for p in moved.pairs] and moved.stats["dropped"]["pair/different_prompt"] == 1
    text_only = Rollout.from_json(rollout.to_json())  # a backend without a tokenizer records no ids
    for t in text_only.trajectories:
        for s in t.segments:
            s.token_ids = s.logprobs = None
    blind = tree_data([text_only])
    assert blind.sft == [] and blind.pairs == [] and "sft/not_token_exact" in blind.stats["dropped"]
    with pytest.raises(ConfigError, match="no search tree"):
        tree_data([Rollout(example_id="x", engine="search_o1")])
    with pytest.raises(ConfigError, match="scope='beam'"):
        tree_data([rollout], scope="beam")


async def test_cli_writes_sft_pairs_drops_and_stats(tmp_path, capsys):
    rollout, _, _ = await _search(lats, Game24Policy)
    run = tmp_path / "run"
    run.mkdir()
    (run / "rollouts.jsonl").write_text(rollout.to_json() + "\n")
    (run / "run.json").write_text(json.dumps({"config": {"engine": "lats", "backend": "llamacpp://default"}}))
    out = tmp_path / "data"
    with pytest.raises(SystemExit) as e:
        main(["synth", "tree-data", "--in", str(run), "--out", str(out), "--scope", "tree"])
    assert e.value.code == 0
    stats = json.loads((out / "stats.json").read_text())
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    assert len(pairs) == stats["pairs"] > 0 and stats["sft_steps"] == len(list(read_trajectories(out / "sft")))
    assert sum(stats["dropped"].values()) == len((out / "dropped.jsonl").read_text().splitlines())
    assert {"prompt", "chosen", "rejected", "prompt_ids", "chosen_ids", "rejected_ids"} <= set(pairs[0])
    assert {p["metadata"]["lineage"]["backend"] for p in pairs} == {"llamacpp://default"}  # the run's, from run.json
    assert "tree-data:" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["synth", "tree-data", "--in", str(run), "--out", str(out)])
    assert e.value.code == 2  # no silent overwrite
    assert [r.example_id for r in read_rollouts(run)] == ["p1"]


async def test_train_dpo_trains_on_the_pairs_own_ids(tmp_path, hf_smollm2):
    """`train.dpo`'s trainer takes the rows' ids as they are (TRL's collator builds each pair's sequences from
    them) and makes one finite update of the embedded model."""
    import torch
    from trl.trainer.dpo_trainer import DataCollatorForPreference

    from train.dpo import DPOSettings, build_dpo_trainer, read_pairs

    rollout, _, _ = await _search(lats, Game24Policy)
    pairs = tree_data([rollout], scope="tree").pairs[:2]
    rows, kind, _ = read_pairs(write_jsonl(tmp_path / "pairs.jsonl", pairs), max_length=512)
    batch = DataCollatorForPreference(pad_token_id=0)(rows)
    for i, row in enumerate(pairs):
        ids = batch["input_ids"][i][batch["attention_mask"][i].bool()].tolist()
        assert ids == row["prompt_ids"] + row["chosen_ids"]
    model = copy.deepcopy(hf_smollm2.model)  # the session's shared model stays as it is
    before = {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}
    settings = DPOSettings(data="pairs.jsonl", out=str(tmp_path / "dpo"), max_steps=1, batch_size=2,
                           learning_rate=1e-5, max_length=512, gguf="none", precision="fp32", threads=1)
    trainer = build_dpo_trainer(model, hf_smollm2._hf_tok, rows, settings)
    assert kind == "ids" and [trainer.train_dataset[i]["chosen_ids"] for i in range(2)] == [r["chosen_ids"] for r in pairs]
    trainer.train()
    loss = next(h["loss"] for h in trainer.state.log_history if "loss" in h)
    assert torch.isfinite(torch.tensor(loss))
    assert any(not torch.equal(before[n], p) for n, p in model.named_parameters() if n in before)
