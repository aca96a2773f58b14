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
