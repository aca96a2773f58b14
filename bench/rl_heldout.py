"""`make rl-eval`: the RL recipe's policies on 100 held-out seeds of a game, paired against each other.

    .venv/bin/python bench/rl_heldout.py --game frozenlake [--seeds 100] [--policies sft,grpo,gigpo]

Writes `runs/rl/<game>/heldout/seeds.jsonl` (`{"seed": N}` for N = 900000 .. 900000+seeds-1: the held-out seeds
the recipe refuses to train or validate on), runs `agentic eval run --task <game> --data SEEDS --backend
llamacpp://<policy.gguf>?n_threads=T --out runs/rl/<game>/heldout/<policy>` for each policy that exists (the
env agent with its defaults, greedy: the same command a user runs), then reports each policy's success rate
with a 95% bootstrap interval and the paired differences (every RL policy against `sft`, and `gigpo` against
`grpo`) over the same seeds. Writes `heldout/summary.json` (with a markdown table the RL report includes) and
prints the table. Each eval run resumes (eval's own resume), so a stopped run continues.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from agentic_infer.runner import iter_jsonl
from eval.stats import bootstrap_ci

HELD_OUT_FROM = 900000


def successes(run: Path) -> dict[str, float]:
    """example id -> success (1/0) from an eval run folder's results."""
    out = {}
    for _, row in iter_jsonl(run / "results.jsonl", "one result row a line"):
        out[str(row["id"])] = float(row["metrics"]["success"])
    return out


def paired(a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """b - a over the ids both scored: the mean difference and its 95% bootstrap interval."""
    ids = sorted(set(a) & set(b))
    diffs = [b[i] - a[i] for i in ids]
    lo, hi = bootstrap_ci(diffs)
    return {"n": len(ids), "diff": sum(diffs) / max(1, len(ids)), "ci": [lo, hi]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="frozenlake")
    ap.add_argument("--out", default="runs/rl")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--policies", default="sft,grpo,gigpo")
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 8))
    args = ap.parse_args()
    game_dir = Path(args.out) / args.game
    folder = game_dir / "heldout"
    folder.mkdir(parents=True, exist_ok=True)
    seeds = folder / "seeds.jsonl"
    seeds.write_text("".join(json.dumps({"id": f"{args.game}-{s}", "seed": s}) + "\n"
                             for s in range(HELD_OUT_FROM, HELD_OUT_FROM + args.seeds)))
    runs, seconds = {}, {}
    for name in args.policies.split(","):
        gguf = game_dir / name / "policy.gguf"
        if not gguf.is_file():
            print(f"[rl-eval] {name}: no {gguf}, skipped", file=sys.stderr)
            continue
        run = folder / name
        cmd = [sys.executable, "-m", "agentic_infer", "eval", "run", "--task", args.game, "--data", str(seeds),
               "--backend", f"llamacpp://{gguf.resolve()}?n_threads={args.threads}", "--out", str(run)]
        print("[rl-eval]", " ".join(cmd), file=sys.stderr)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        seconds[name] = round(time.perf_counter() - t0, 1)
        runs[name] = successes(run)
    summary: dict[str, Any] = {"game": args.game, "seeds": [HELD_OUT_FROM, HELD_OUT_FROM + args.seeds - 1],
                               "seconds": seconds, "policies": {}, "paired": {}}
    for name, s in runs.items():
        vals = list(s.values())
        summary["policies"][name] = {"n": len(vals), "success": sum(vals) / max(1, len(vals)),
                                     "ci": list(bootstrap_ci(vals))}
    pairs = [("sft", p) for p in runs if p != "sft"] + ([("grpo", "gigpo")] if {"grpo", "gigpo"} <= set(runs) else [])
    for a, b in pairs:
        if a in runs:
            summary["paired"][f"{b} - {a}"] = paired(runs[a], runs[b])
    lines = ["| policy | seeds | success | 95% CI | eval s |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {p['n']} | {p['success']:.2f} | [{p['ci'][0]:.2f}, {p['ci'][1]:.2f}] | {seconds[n]} |"
              for n, p in summary["policies"].items()]
    lines += ["", "| paired difference | seeds | mean | 95% CI |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['diff']:+.2f} | [{v['ci'][0]:+.2f}, {v['ci'][1]:+.2f}] |"
              for k, v in summary["paired"].items()]
    summary["markdown"] = "\n".join(lines)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    print(summary["markdown"])


if __name__ == "__main__":
    main()
