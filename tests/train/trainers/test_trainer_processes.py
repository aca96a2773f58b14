"""`agentic train sft --processes 2`: two Accelerate processes (gloo DDP on CPU) launched from the files
`--print-launch` writes give the one-process loss curve at the same global batch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agentic_infer.runner import write_jsonl

ROOT = Path(__file__).resolve().parents[3]
TOL = 2e-4  # |loss(2 processes) - loss(1 process)| per logged step: float reduction order only


def _sft(tiny_dir: Path, data: Path, out: Path, *extra: str) -> dict:
    cmd = [sys.executable, "-m", "agentic_infer", "train", "sft", "--model", f"hf://{tiny_dir}", "--data", str(data),
           "--out", str(out), "--max-steps", "4", "--set", "gguf=none", "--set", "learning_rate=0.01",
           "--set", "precision=fp32", "--set", "logging_steps=1", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("ACCELERATE_USE_CPU", None)
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((out / "sft_result.json").read_text())


def test_two_processes_give_the_one_process_loss_curve(tmp_path, tiny_dir, traj_factory):
    rows = [traj_factory(f"Question number {i} about {'long ' * (i % 4)}things?",
                         [("model", f"Answer {i}: " + "word " * (2 + 3 * (i % 5)))]).to_dict() for i in range(16)]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    one = _sft(tiny_dir, data, tmp_path / "one", "--set", "batch_size=4", "--set", "threads=1")
    two = _sft(tiny_dir, data, tmp_path / "two", "--set", "batch_size=2", "--processes", "2")
    launch = tmp_path / "two" / "launch"
    assert (launch / "accelerate.yaml").is_file() and (launch / "launch.sh").is_file()
    assert "accelerate launch --config_file" in (launch / "launch.sh").read_text()
    assert one["processes"] == 1 and two["processes"] == 2  # the trainer's own world size
    la = [h["loss"] for h in one["history"]]
    lb = [h["loss"] for h in two["history"]]
    assert len(la) == len(lb) == 4 and la[0] != la[-1]  # it trained
    assert max(abs(a - b) for a, b in zip(la, lb)) <= TOL, (la, lb)


def test_each_rank_seeds_its_episodes_as_one_process_would(tokenizer):
    """Rank r of W takes block r of every W-block of seeds: the ranks' episodes together get the seeds of the
    one-process batch (rank order = batch order) and no two ranks share one (both used to start at `seed`)."""
    from types import SimpleNamespace

    from agentic_infer.backends.hf import HFLLM
    from tests.train.trainers.conftest import StepEngine, tiny_model
    from train.grpo.rollout import RolloutFunc

    llm = HFLLM.from_model(tiny_model(tokenizer), tokenizer)
    prompts = [[{"role": "user", "content": f"q{i}"}] for i in range(2)]

    def seeds_of(rank: int, world: int, calls: int = 2) -> list[int]:
        seen: list[int] = []
        rf = RolloutFunc(lambda _llm, seed: (seen.append(seed), StepEngine(_llm, seed))[1], tokenizer=tokenizer,
                         seed=10, llm_factory=lambda _t: llm, example_for=lambda p, i: {"id": str(i), "question": p[0]["content"]})
        trainer = SimpleNamespace(accelerator=SimpleNamespace(process_index=rank, num_processes=world))
        for _ in range(calls):
            rf(prompts, trainer)
        return seen

    assert seeds_of(0, 1, calls=4) == list(range(10, 18))
    assert seeds_of(0, 2) == [10, 11, 14, 15] and seeds_of(1, 2) == [12, 13, 16, 17]


def one_seed_reward(inp, **_):
    """A reward with variance on one task only (`reward: MODULE:FUNCTION`): the sum of the sampled ids modulo 7 on
    frozenlake-10001, 0 on the other; so one group trains and the other has nothing to train."""
    ids = [i for seg in inp.trajectory.segments if seg.kind == "model" for i in seg.token_ids]
    return float(sum(ids) % 7) if inp.extra.get("env_task_id") == "frozenlake-10001" else 0.0


def _grpo(tmp_path: Path, tiny_dir: Path, name: str, batch: int, *extra: str) -> dict:
    import yaml

    seeds = tmp_path / "seeds.jsonl"
    seeds.write_text("".join(json.dumps({"id": f"frozenlake-{s}", "seed": s, "view": "described"}) + "\n"
                             for s in (10000, 10001)))
    cfg = {"model": f"hf://{tiny_dir}", "data": str(seeds), "env": "frozenlake", "num_generations": 2,
           "batch_size": batch, "rollout_batch": 2, "max_steps": 1, "gguf": "none", "mi_every": 0,
           "precision": "fp32", "seed": 0, "max_completion_length": 512, "learning_rate": 1e-3,
           "reward": "tests.train.trainers.test_trainer_processes:one_seed_reward",
           "engine_config": {"max_turns": 2, "max_tokens_per_turn": 4, "sampling": {"temperature": 1.0, "logprobs": 0}}}
    (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / name
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "agentic_infer", "train", "grpo", "--config",
                           str(tmp_path / f"{name}.yaml"), "--out", str(out), *extra], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((out / "grpo_result.json").read_text())
    [step] = [h for h in result["log_history"] if "loss" in h]
    return {"processes": result["processes"], **step}


def test_grpo_on_two_processes_gives_the_one_process_loss_when_a_rank_has_no_row_to_train(tmp_path, tiny_dir):
    """`agentic train grpo --processes 2` end to end (launch, rollouts per rank, gather, rank 0 saves) against one
    process at the same global batch (2 groups of 2): the same episodes (seeded by their place in the global batch),
    rewards and loss. One group has reward variance and the other none, so one rank trains its rows and the other
    takes the zero-loss path (a one-token forward x 0 that still joins DDP's all-reduce)."""
    one = _grpo(tmp_path, tiny_dir, "one", 2, "--set", "trl.gradient_accumulation_steps=2")
    two = _grpo(tmp_path, tiny_dir, "two", 2, "--processes", "2")
    assert one["processes"] == 1 and two["processes"] == 2
    assert one["reward"] == two["reward"] and one["reward_std"] == two["reward_std"] and one["reward"] > 0
    assert one["loss"] != 0 and abs(one["loss"] - two["loss"]) < TOL, (one["loss"], two["loss"])
