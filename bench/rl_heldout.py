"""`make rl-eval`: the RL recipe's policies on 100 held-out seeds of a game, paired against each other.

    .venv/bin/python bench/rl_heldout.py --game frozenlake [--seeds 100] [--policies sft,grpo,gigpo] [--jobs 2] [--threads T]

Writes `runs/rl/<game>/heldout/seeds.jsonl` (`{"seed": N}` plus the recipe's `board` settings, e.g. its view, for
N = 900000 .. 900000+seeds-1: the held-out seeds the recipe refuses to train or validate on), runs `agentic eval run --task <game> --data SEEDS --backend
llamacpp://<policy.gguf>?n_threads=T --set KEY=VALUE... --out runs/rl/<game>/heldout/<policy>` for each policy
that exists (greedy, the same command a user runs; `--set` gives the env agent the settings the recipe trained and
validated with, read from the SFT stage's `done.json`: step limit, turn budget, tool section), `jobs` policies at
a time with cores/jobs llama.cpp threads each (decoding one sequence does not use two cores fully), then reports
each policy's success rate
with a 95% bootstrap interval and the paired differences (every RL policy against `sft`, and every other RL
policy against `grpo`) over the same seeds. Writes `heldout/summary.json` (with a markdown table the RL report includes) and
prints the table. Each eval run resumes (eval's own resume), so a stopped run continues.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the train package, not bench/train.py

from agentic_infer.runner import iter_jsonl  # noqa: E402
from eval.stats import bootstrap_ci  # noqa: E402

HELD_OUT_FROM = 900000


def successes(run: Path) -> dict[str, float]:
    """example id -> success (1/0) from an eval run folder's results."""
    return {str(row["id"]): float(row["metrics"]["success"]) for row in rows_of(run)}


def rows_of(run: Path) -> list[dict[str, Any]]:
    return [row for _, row in iter_jsonl(run / "results.jsonl", "one result row a line")]


def per_episode(run: Path) -> dict[str, float]:
    """Mean seconds and tool calls per episode, from the rows (so a resumed run's figures cover every episode)."""
    rows = rows_of(run)
    n = max(1, len(rows))
    return {"s_per_episode": round(sum(r["wall_s"] for r in rows) / n, 2),
            "calls_per_episode": round(sum(r["tool_calls"] for r in rows) / n, 2)}


def paired(a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """b - a over the ids both scored: the mean difference and its 95% bootstrap interval."""
    ids = sorted(set(a) & set(b))
    diffs = [b[i] - a[i] for i in ids]
    lo, hi = bootstrap_ci(diffs)
    return {"n": len(ids), "diff": sum(diffs) / max(1, len(ids)), "ci": [lo, hi]}


def trained_settings(game_dir: Path) -> Any:
    """The `RLSettings` of the recipe run under `game_dir` (its SFT stage's `done.json`): agent and board."""
    from train.rl.recipe import RLSettings

    done = game_dir / "sft" / "done.json"
    if not done.is_file():
        raise SystemExit(f"[rl-eval] no {done}: run `make rl GAME={game_dir.name}` first")
    return RLSettings(**json.loads(done.read_text())["settings"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--game", default="frozenlake")
    ap.add_argument("--out", default="runs/rl")
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--policies", default="sft,grpo,gigpo")
    ap.add_argument("--jobs", type=int, default=2, help="policies evaluated at once")
    ap.add_argument("--threads", type=int, default=0,
                    help="llama.cpp threads per policy (default 0: the cores, at most 8, over --jobs)")
    args = ap.parse_args()
    if args.jobs < 1 or args.threads < 0:
        raise SystemExit(f"--jobs {args.jobs} --threads {args.threads}: need jobs >= 1 and threads >= 0")
    game_dir = Path(args.out) / args.game
    threads = args.threads or max(1, min(os.cpu_count() or 1, 8) // args.jobs)
    settings = trained_settings(game_dir)
    agent = settings.agent
    overrides = [f"--set={k}={v}" for k, v in agent.items()]
    folder = game_dir / "heldout"
    folder.mkdir(parents=True, exist_ok=True)
    seeds = folder / "seeds.jsonl"
    seeds.write_text("".join(json.dumps(row) + "\n" for row in settings.rows(HELD_OUT_FROM, args.seeds)))
    names = [n for n in args.policies.split(",") if (game_dir / n / "policy.gguf").is_file()]
    for name in sorted(set(args.policies.split(",")) - set(names)):
        print(f"[rl-eval] {name}: no {game_dir / name / 'policy.gguf'}, skipped", file=sys.stderr)

    def evaluate(name: str) -> float:
        gguf = (game_dir / name / "policy.gguf").resolve()
        cmd = [sys.executable, "-m", "agentic_infer", "eval", "run", "--task", args.game, "--data", str(seeds),
               "--backend", f"llamacpp://{gguf}?n_threads={threads}", *overrides, "--out", str(folder / name)]
        print("[rl-eval]", " ".join(cmd), file=sys.stderr)
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True)
        return round(time.perf_counter() - t0, 1)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        seconds = dict(zip(names, pool.map(evaluate, names)))
    wall = round(time.perf_counter() - t0, 1)
    runs = {name: successes(folder / name) for name in names}
    summary: dict[str, Any] = {"game": args.game, "seeds": [HELD_OUT_FROM, HELD_OUT_FROM + args.seeds - 1],
                               "seconds": seconds, "wall_seconds": wall, "jobs": args.jobs, "threads": threads,
                               "agent": agent, "policies": {}, "paired": {}}
    for name, s in runs.items():
        vals = list(s.values())
        summary["policies"][name] = {"n": len(vals), "success": sum(vals) / max(1, len(vals)),
                                     "ci": list(bootstrap_ci(vals)), **per_episode(folder / name)}
    pairs = [("sft", p) for p in runs if p != "sft"] + [("grpo", p) for p in runs if p not in ("sft", "grpo")]
    for a, b in pairs:
        if a in runs:
            summary["paired"][f"{b} - {a}"] = paired(runs[a], runs[b])
    lines = ["| policy | seeds | success | 95% CI | tool calls/episode | s/episode | eval s (this call) |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {n} | {p['n']} | {p['success']:.2f} | [{p['ci'][0]:.2f}, {p['ci'][1]:.2f}] | "
              f"{p['calls_per_episode']} | {p['s_per_episode']} | {seconds[n]} |" for n, p in summary["policies"].items()]
    lines += ["", "| paired difference | seeds | mean | 95% CI |", "|---|---|---|---|"]
    lines += [f"| {k} | {v['n']} | {v['diff']:+.2f} | [{v['ci'][0]:+.2f}, {v['ci'][1]:+.2f}] |"
              for k, v in summary["paired"].items()]
    lines += ["", f"Eval wall time {wall} s ({args.jobs} policies at a time, {threads} llama.cpp threads each)."]
    summary["markdown"] = "\n".join(lines)
    (folder / "summary.json").write_text(json.dumps(summary, indent=2))
    print(summary["markdown"])


if __name__ == "__main__":
    main()
