"""SE-Agent trajectory evolution against best-of-B sampling and LATS, at the same generation budget B, on Game of 24.

    .venv/bin/python bench/evolve.py [--backend URI] [--limit 10] [--budget 4] [--pool 2] [--out runs/evolve/game24]

Each puzzle (the first `limit` of the ToT ranked train file; ranks 901-1000 are never read) gets B attempts per
method: `best-of-B` (B seeded CoT samples of the task's own prompt, stopping at the first solved), `se-agent`
(`synth.evolve.evolve`: a pool of `pool` samples, then revision / recombination / refinement guidance for each
further attempt) and `lats` (the task's LATS with a budget of B LLM calls). Solved means the exact Game of 24
checker (`game24_valid`) accepts the answer. Reports solved@B per method with a 95% bootstrap interval and the
paired difference of SE-Agent to best-of-B; writes `OUT/results.json` and every attempt (`OUT/attempts.jsonl`, with
its lineage: operator, parents, guidance).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentic_infer.backends import load_llm  # noqa: E402
from agentic_infer.engines.registry import EngineParts, build_engine, engine_config, with_seed  # noqa: E402
from agentic_infer.tasks import get_task  # noqa: E402
from agentic_infer.verify import score  # noqa: E402
from eval.stats import bootstrap_ci  # noqa: E402
from synth.evolve import best_of, evolve  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "puzzles" / "game24_ranked_1_900.csv"


def verify(example, traj) -> float:
    return score("game24_valid", traj.answer, example["gold"], text=traj.completion_text, example=example)


async def run(args: argparse.Namespace) -> dict:
    task = get_task("game24")
    puzzles = task.load(args.data, limit=args.limit)
    llm = load_llm(args.backend)
    parts = EngineParts(llm=llm, task=task)
    cot = engine_config("cot", [f"sampling.max_tokens={args.max_tokens}", "sampling.temperature=0.7"])

    def make(seed: int):
        return build_engine("cot", parts, with_seed(cot, seed))

    lats_cfg = engine_config("lats", [f"budget.llm_calls={args.budget}", "budget.iterations=null"])
    lats = build_engine("lats", parts, lats_cfg)
    rows, attempts = [], []
    for ex in puzzles:
        t0 = time.perf_counter()
        base = await best_of(ex, make, verify, budget=args.budget)
        t1 = time.perf_counter()
        se = await evolve(ex, make, verify, budget=args.budget, pool=args.pool)
        t2 = time.perf_counter()
        tree = await lats.run(ex)
        t3 = time.perf_counter()
        rows.append({"id": ex["id"], "puzzle": ex["question"], "best_of": float(base.solved),
                     "se_agent": float(se.solved), "lats": float(tree.rewards.get("correct", 0.0) >= 1.0),
                     "used": {"best_of": base.used, "se_agent": se.used,
                              "lats": tree.metadata["tree"]["budget"]["spent"]["llm_calls"]},
                     "seconds": {"best_of": round(t1 - t0, 1), "se_agent": round(t2 - t1, 1),
                                 "lats": round(t3 - t2, 1)}})
        attempts += [t.to_dict() for t in se.attempts]
        print(json.dumps(rows[-1]), flush=True)
    out = {"budget": args.budget, "pool": args.pool, "backend": args.backend, "puzzles": len(rows), "methods": {}}
    for m in ("best_of", "se_agent", "lats"):
        vals = [r[m] for r in rows]
        out["methods"][m] = {"solved": sum(vals), "rate": sum(vals) / max(len(vals), 1),
                             "ci": bootstrap_ci(vals), "s_per_puzzle": sum(r["seconds"][m] for r in rows) / len(rows)}
    diff = [r["se_agent"] - r["best_of"] for r in rows]
    out["se_agent_minus_best_of"] = {"mean": sum(diff) / len(diff), "ci": bootstrap_ci(diff)}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps({**out, "rows": rows}, indent=2))
    (args.out / "attempts.jsonl").write_text("".join(json.dumps(a) + "\n" for a in attempts))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="llamacpp://default?n_threads=2")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--budget", type=int, default=4)
    p.add_argument("--pool", type=int, default=2)
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--out", type=Path, default=Path("runs/evolve/game24"))
    out = asyncio.run(run(p.parse_args()))
    print("| method | solved@B | rate [95% CI] | s/puzzle |\n|---|---|---|---|")
    for m, v in out["methods"].items():
        print(f"| {m} | {v['solved']:.0f}/{out['puzzles']} | {v['rate']:.2f} [{v['ci'][0]:.2f}, {v['ci'][1]:.2f}] | "
              f"{v['s_per_puzzle']:.1f} |")
    d = out["se_agent_minus_best_of"]
    print(f"\nSE-Agent - best-of-B: {d['mean']:+.2f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}] (B = {out['budget']})")


if __name__ == "__main__":
    main()
