"""SE-Agent trajectory evolution against best-of-B sampling and LATS, at the same budget B, on Game of 24 or on
multi-hop QA with a trained search policy.

    .venv/bin/python bench/evolve.py [--backend URI] [--limit 10] [--budget 4] [--pool 2] [--out runs/evolve/game24]
    .venv/bin/python bench/evolve.py --task hotpotqa --backend llamacpp://runs/distill/policy.gguf \\
        --analyst llamacpp://default --limit 20 --out runs/evolve/hotpotqa

Each item (Game of 24: the first `limit` of the ToT ranked train file, ranks 901-1000 never read; multi-hop: the
first `limit` of the task's dev file, each question over its own paragraphs) gets B attempts per method:
`best_of` (B seeded samples, stopping at the first solved), `se_agent` (`synth.evolve.evolve`: a pool of `pool`
samples, then revision / recombination / refinement guidance for each further attempt), `se_agent_llm` (the same
with the LLM summariser, `--analyst URI`: its analyses are extra generations, counted in `llm_calls`) and `lats`
(the task's LATS with a budget of `--lats-calls` LLM calls; default B for Game of 24's single-call attempts, 3B
for multi-hop, where an attempt is a Search-o1 episode of about three calls). An attempt is Game of 24's CoT with
the task's prompt (temperature 0.7, 128 tokens) or a Search-o1 episode with the distilled policy's settings
(`MULTIHOP`). Solved: the task's primary metric is 1 (Game of 24's exact checker; EM for QA). Reports solved@B per
method with a 95% bootstrap interval, LLM calls per item, and SE-Agent's paired difference to best-of-B; rows are
appended to `OUT/rows.jsonl` as each item finishes (a rerun skips them), every SE-Agent attempt to
`OUT/attempts.jsonl` (lineage: operator, parents, guidance; the analysis) and the table to `OUT/results.json`.
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
from agentic_infer.engines.registry import (  # noqa: E402
    EngineParts,
    answer_text,
    build_engine,
    engine_config,
    with_seed,
)
from agentic_infer.runner import read_jsonl  # noqa: E402
from agentic_infer.tasks import get_task  # noqa: E402
from agentic_infer.tools.retrieval.corpora import retriever_factory  # noqa: E402
from agentic_infer.verify import score  # noqa: E402
from eval.stats import bootstrap_ci  # noqa: E402
from synth.evolve import LLMAnalyst, best_of, evolve  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
GAME24 = {"engine": "cot", "data": DATA / "puzzles" / "game24_ranked_1_900.csv", "calls_per_attempt": 1,
          "settings": ["sampling.max_tokens=128", "sampling.temperature=0.7"]}
MULTIHOP = {"engine": "search-o1", "calls_per_attempt": 3,  # the distilled policy's eval settings (make distill)
            "settings": ["rid=false", "k=2", "passage_chars=300", "max_searches=5", "sampling.max_tokens=256"]}
METHODS = ("best_of", "se_agent", "se_agent_llm", "lats")


def plan(task_name: str, data: Path | None) -> tuple[dict, Path]:
    spec = GAME24 if task_name == "game24" else MULTIHOP
    return spec, data or spec.get("data") or DATA / get_task(task_name).default_files[0]


def calls(attempts) -> int:
    return sum(t.usage.llm_calls for t in attempts)


async def run(args: argparse.Namespace) -> dict:
    task = get_task(args.task)
    spec, data = plan(args.task, args.data)
    items = task.load(data, limit=args.limit)
    by_id = {ex["id"]: ex for ex in items}
    factory = None if args.task == "game24" else retriever_factory(corpus="per-question", task=task, data=data)
    retriever_for = None if factory is None else (lambda ex: factory(by_id[ex["id"]]))
    parts = EngineParts(llm=load_llm(args.backend), task=task, retriever_for=retriever_for)
    cfg = engine_config(spec["engine"], spec["settings"])
    analyst = LLMAnalyst(load_llm(args.analyst)) if args.analyst else None
    lats_calls = args.lats_calls or spec["calls_per_attempt"] * args.budget
    lats = build_engine("lats", parts, engine_config("lats", [f"budget.llm_calls={lats_calls}",
                                                              "budget.iterations=null"]))

    def make(seed: int):
        return build_engine(spec["engine"], parts, with_seed(cfg, seed))

    def verify(example, traj) -> float:
        return score(task.primary, traj.answer, example["gold"], text=traj.completion_text, example=example)

    args.out.mkdir(parents=True, exist_ok=True)
    rows_path, attempts_path = args.out / "rows.jsonl", args.out / "attempts.jsonl"
    rows = read_jsonl(rows_path) if rows_path.exists() else []
    done = {r["id"] for r in rows}
    for ex in (ex for ex in items if ex["id"] not in done):
        q = {"id": ex["id"], "question": ex["question"], "gold": ex["gold"]}
        row, seconds, used = {"id": ex["id"], "question": ex["question"]}, {}, {}
        attempts = []
        for m in METHODS:
            if m == "se_agent_llm" and analyst is None:
                continue
            t0 = time.perf_counter()
            if m == "lats":
                tree = await lats.run(q)
                row[m] = score(task.primary, tree.answer, ex["gold"], text=answer_text(tree), example=ex)
                used[m] = tree.metadata["tree"]["budget"]["spent"]["llm_calls"]
            elif m == "best_of":
                r = await best_of(q, make, verify, budget=args.budget)
                row[m], used[m] = float(r.solved), calls(r.attempts)
            else:
                r = await evolve(q, make, verify, budget=args.budget, pool=args.pool,
                                 analyst=analyst if m == "se_agent_llm" else None)
                row[m], used[m] = float(r.solved), calls(r.attempts) + r.analyses
                attempts += [{"method": m, **t.to_dict()} for t in r.attempts]
            seconds[m] = round(time.perf_counter() - t0, 1)
        row.update(llm_calls=used, seconds=seconds)
        with attempts_path.open("a") as f:
            f.writelines(json.dumps(a) + "\n" for a in attempts)
        with rows_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        rows.append(row)
        print(json.dumps(row), flush=True)
    out = {"task": args.task, "budget": args.budget, "pool": args.pool, "backend": args.backend,
           "analyst": args.analyst, "lats_calls": lats_calls, "items": len(rows), "methods": {}}
    for m in (m for m in METHODS if all(m in r for r in rows)):
        vals = [r[m] for r in rows]
        out["methods"][m] = {"solved": sum(vals), "rate": sum(vals) / max(len(vals), 1), "ci": bootstrap_ci(vals),
                             "llm_calls_per_item": sum(r["llm_calls"][m] for r in rows) / len(rows),
                             "s_per_item": sum(r["seconds"][m] for r in rows) / len(rows)}
    out["paired_vs_best_of"] = {}
    for m in ("se_agent", "se_agent_llm"):
        if m in out["methods"]:
            diff = [r[m] - r["best_of"] for r in rows]
            out["paired_vs_best_of"][m] = {"mean": sum(diff) / len(diff), "ci": bootstrap_ci(diff)}
    (args.out / "results.json").write_text(json.dumps(out, indent=2))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="game24", help="game24, or a multi-hop QA task (hotpotqa, musique, 2wiki)")
    p.add_argument("--backend", default="llamacpp://default?n_threads=2")
    p.add_argument("--analyst", default=None, help="backend URI of the LLM summariser (adds the se_agent_llm arm)")
    p.add_argument("--data", type=Path, default=None)
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--budget", type=int, default=4)
    p.add_argument("--pool", type=int, default=2)
    p.add_argument("--lats-calls", type=int, default=None)
    p.add_argument("--out", type=Path, default=Path("runs/evolve/game24"))
    out = asyncio.run(run(p.parse_args()))
    print("| method | solved@B | rate [95% CI] | LLM calls/item | s/item |\n|---|---|---|---|---|")
    for m, v in out["methods"].items():
        print(f"| {m} | {v['solved']:.0f}/{out['items']} | {v['rate']:.2f} [{v['ci'][0]:.2f}, {v['ci'][1]:.2f}] | "
              f"{v['llm_calls_per_item']:.1f} | {v['s_per_item']:.1f} |")
    for m, d in out["paired_vs_best_of"].items():
        print(f"\n{m} - best_of: {d['mean']:+.2f} [{d['ci'][0]:+.2f}, {d['ci'][1]:+.2f}] (B = {out['budget']})")


if __name__ == "__main__":
    main()
