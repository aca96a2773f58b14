"""Does the precision a policy runs at change its greedy validation success? fp32 vs bf16 autocast, same weights.

    .venv/bin/python bench/rl_val_precision.py [--model runs/rl/frozenlake/sft/model] [--seeds 32]

Inside the trainer a policy's forward runs under the run's autocast (accelerate wraps it: bf16 on a CPU with
native bf16), while a checkpoint loaded on its own runs fp32; greedy decoding can take other moves. This runs
`train.rl.validate.validate` on the RL recipe's validation seeds (800000..) both ways, on one model object, and
prints each success rate and the seeds whose outcome differs.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the train package, not bench/train.py


def main() -> None:
    import torch

    from train.model_io import load_trainable
    from train.rl import RLSettings
    from train.rl.validate import validate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="runs/rl/frozenlake/sft/model")
    ap.add_argument("--seeds", type=int, default=32)
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 8))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    s = RLSettings(val_size=args.seeds)
    rows = s.rows(s.val_seed_start, s.val_size)
    model, tok = load_trainable(args.model)
    res = {}
    for name, on in (("fp32", False), ("bf16 autocast", True)):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=on):
            res[name] = validate(model, tok, rows, game=s.game, agent=s.agent, batch=s.val_size)
        print(f"{name:>14}: success {res[name]['success']:.4f} ({int(sum(res[name]['successes']))}/{len(rows)}), "
              f"{res[name]['calls']:.2f} calls per episode", flush=True)
    a, b = res["fp32"]["successes"], res["bf16 autocast"]["successes"]
    flips = [(r["seed"], x, y) for r, x, y in zip(rows, a, b) if x != y]
    print(f"seeds whose outcome differs: {len(flips)} {flips}")


if __name__ == "__main__":
    main()
