"""Synchronous GRPO vs TRL's AsyncGRPOTrainer (train.grpo.async_trl) at staleness 0 and 1, same updates per step.

    .venv/bin/python bench/async_grpo.py [--steps 4] [--staleness 0,1]    # after `make rl` (its SFT policy)

From the FrozenLake SFT policy of `make rl` (runs/rl/frozenlake/sft/model), on its first 4 train seeds: each step
trains 8 episodes (2 groups of 4, GRPO advantages, lr 2e-5, fp32), `--steps` steps, run one after the other in one
process's machine (nothing else should run beside them). Per run: wall time of `trainer.train()`, seconds per
step, reward per step, episodes generated (the async worker generates ahead: some are dropped as stale or left in
the queue), TRL's staleness figures. Writes bench/results/async_grpo.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from train_processes import agentic, grpo_config  # noqa: E402


def run(cfg: Path, out: Path, staleness: int) -> dict:
    agentic("train", "grpo", "--config", str(cfg), "--out", str(out), "--set", "trl.gradient_accumulation_steps=2",
            "--set", f"async_staleness={staleness}")
    r = json.loads((out / "grpo_result.json").read_text())
    steps = [h for h in r["log_history"] if "loss" in h]
    final = r["log_history"][-1]
    row = {"staleness": staleness, "steps": r["steps"], "train_s": round(final.get("train_runtime", 0.0), 1),
           "s_per_step": round(final.get("train_runtime", 0.0) / max(r["steps"], 1), 1),
           "reward": [round(h.get("reward", float("nan")), 4) for h in steps],
           "loss": [round(h["loss"], 5) for h in steps]}
    if staleness >= 0:
        row.update(generated=r["async"]["samples_generated"],
                   dropped_stale=sum(h.get("sample/dropped_stale_total", 0) for h in steps),
                   trainer_wait_s=round(sum(h.get("perf/rollout_wait_s", 0) for h in steps), 1),
                   staleness_mean=[h.get("sample/staleness_mean") for h in steps],
                   ratio=[round(h.get("ratio", float("nan")), 4) for h in steps])
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description="sync vs async GRPO (see module docstring)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--staleness", default="0,1", help="async max_staleness values, comma-separated")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "async_grpo.json"))
    args = ap.parse_args()
    res: dict = {"cores": os.cpu_count(), "steps": args.steps, "runs": []}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        cfg = grpo_config(t, seeds=4, steps=args.steps)
        for s in [-1, *(int(x) for x in args.staleness.split(","))]:
            row = run(cfg, t / f"run{s}", s)
            res["runs"].append(row)
            print(json.dumps(row), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
