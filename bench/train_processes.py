"""SFT and GRPO on 1 vs 2 processes (Accelerate, gloo DDP on CPU) at the same global batch: step time and loss.

    .venv/bin/python bench/train_processes.py [--sft-steps 4] [--grpo]    # after `make rl` (its demos, SFT policy)

1. SFT: the embedded model on the FrozenLake solver demos of `make rl` (runs/rl/frozenlake/demos/sft.jsonl),
   `--sft-steps` steps of 4 rows: one process with batch_size 4 (all cores) vs `agentic train sft --processes 2`
   with batch_size 2 (half the cores each). Per run: seconds per step (the trainer's train_runtime / steps), the
   loss curve; then the largest per-step loss difference.
2. GRPO (`--grpo`): one step from the FrozenLake SFT policy (runs/rl/frozenlake/sft/model) on 2 train seeds x 4
   episodes: one process with 2 micro-batches of 4 vs `--processes 2` with one group per process. Per run: the
   step time, reward, loss; the episodes are seeded by their place in the global batch on either layout.
Runs one after the other in this process's machine; nothing else should run beside them. Writes
bench/results/train_processes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the `train` package, not bench/train.py
RL = ROOT / "runs" / "rl" / "frozenlake"


def agentic(*args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-m", "agentic_infer", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)


def sft_run(out: Path, steps: int, *extra: str) -> dict:
    agentic("train", "sft", "--model", "llamacpp://default", "--data", str(RL / "demos" / "sft.jsonl"), "--out",
            str(out), "--max-steps", str(steps), "--set", "gguf=none", "--set", "precision=fp32",
            "--set", "learning_rate=5e-5", "--set", "max_length=4096", *extra)
    r = json.loads((out / "sft_result.json").read_text())
    return {"processes": r["processes"], "s_per_step": round(r["train_seconds"] / r["steps"], 2),
            "loss": [h["loss"] for h in r["history"]]}


def grpo_run(cfg: Path, out: Path, *extra: str) -> dict:
    agentic("train", "grpo", "--config", str(cfg), "--out", str(out), *extra)
    r = json.loads((out / "grpo_result.json").read_text())
    [h] = [h for h in r["log_history"] if "loss" in h]
    return {"processes": r["processes"], "step_s": round(h.get("step_time", 0.0), 1), "reward": h["reward"],
            "reward_std": h["reward_std"], "loss": h["loss"]}


def grpo_config(tmp: Path, *, seeds: int = 2, steps: int = 1) -> Path:
    """GRPO from the FrozenLake SFT policy of `make rl` on its first `seeds` train seeds, `steps` steps."""
    from train.rl import RLSettings

    s = RLSettings(game="frozenlake")
    rows = tmp / "seeds.jsonl"
    rows.write_text("".join(json.dumps(r) + "\n" for r in s.rows(s.train_seed_start, seeds)))
    cfg = {"model": str(RL / "sft" / "model"), "data": str(rows), "env": "frozenlake", "num_generations": 4,
           "batch_size": 4, "rollout_batch": 4, "max_steps": steps, "learning_rate": 2e-5, "max_completion_length": 4096,
           "gguf": "none", "mi_every": 0, "precision": "fp32", "seed": 0,
           "engine_config": {**s.agent, "sampling": {"temperature": 1.0, "logprobs": 0}},
           "trl": {"temperature": 1.0, "gradient_checkpointing": False}}
    path = tmp / "grpo.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description="1 vs 2 training processes (see module docstring)")
    ap.add_argument("--sft-steps", type=int, default=4)
    ap.add_argument("--grpo", action="store_true")
    ap.add_argument("--no-sft", action="store_true", help="skip the SFT comparison")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "train_processes.json"))
    args = ap.parse_args()
    res: dict = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        if not args.no_sft:
            one = sft_run(t / "sft1", args.sft_steps, "--set", "batch_size=4")
            two = sft_run(t / "sft2", args.sft_steps, "--set", "batch_size=2", "--processes", "2")
            res["sft"] = {"one": one, "two": two,
                          "max_loss_diff": max(abs(a - b) for a, b in zip(one["loss"], two["loss"]))}
            print(f"SFT {args.sft_steps} steps x 4 rows: 1 process {one['s_per_step']} s/step, 2 processes "
                  f"{two['s_per_step']} s/step; largest loss difference {res['sft']['max_loss_diff']:.2e}")
        if args.grpo:
            cfg = grpo_config(t)
            g1 = grpo_run(cfg, t / "grpo1", "--set", "trl.gradient_accumulation_steps=2")
            g2 = grpo_run(cfg, t / "grpo2", "--processes", "2")
            res["grpo"] = {"one": g1, "two": g2}
            print(f"GRPO 1 step x 8 episodes: 1 process {g1['step_s']} s (reward {g1['reward']}, loss {g1['loss']:.5f}), "
                  f"2 processes {g2['step_s']} s (reward {g2['reward']}, loss {g2['loss']:.5f})")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
