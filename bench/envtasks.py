"""Env task synthesis and teacher-free env demonstrations, measured on the real retail database.

    .venv/bin/python bench/envtasks.py --count 200 --seed 0 --train-limit 500 --synth-demos 200

1. Sampling (`agentic synth envtasks` without an LLM): `--count` seeds through the whole pipeline (sample ->
   template intent -> replay and intent checks -> tasks.jsonl): how many sampled, how many verified, the drop
   reasons, counts per template wording and per write-kind sequence, seconds per task (the steps' own time
   and the run's wall time, datatrove's start-up included).
2. Demos from the retail TRAIN tasks (`--from-tasks retail_tasks_train.jsonl --demos`, the first
   `--train-limit`): how many verified (reward 1 from the real RetailEnv verdict), the rejection reasons,
   seconds per demo, tokens (SmolLM2's tokenizer from the embedded GGUF).
3. Demos of the first `--synth-demos` synthesized tasks (0 skips), and stage 1: BFCL's gold calls through the
   bfcl env (`--bfcl-limit` rows per file; BFCL eval items).
Prints a table and writes runs/bench/envtasks.json. Not covered: LLM rewording (needs a model worth running).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.backends.tokenizer import load_tokenizer  # noqa: E402
from agentic_infer.executors import ExecutorConfig  # noqa: E402
from agentic_infer.tools.retrieval.recipes import shared_data_dir  # noqa: E402
from synth.demos import Vocab  # noqa: E402
from synth.envtasks import EnvTasksConfig, run_envtasks  # noqa: E402
from synth.envtasks.demos import build_env_demos  # noqa: E402
from synth.envtasks.stages import stage1_demos  # noqa: E402


def _demo_summary(stats: dict, wall: float) -> dict:
    return {"tried": stats["tried"], "verified": stats["kept"], "rejected": stats["rejected"],
            "tokens": stats["tokens"], "wall_s": round(wall, 2),
            "s_per_demo": round(wall / stats["tried"], 3) if stats["tried"] else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-limit", type=int, default=500)
    ap.add_argument("--synth-demos", type=int, default=200)
    ap.add_argument("--bfcl-limit", type=int, default=None, help="rows per BFCL file for stage 1 (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "runs" / "bench" / "envtasks.json")
    args = ap.parse_args()
    from loguru import logger  # datatrove logs every step of every run at INFO: keep its warnings only

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    train = shared_data_dir() / "tools" / "tau_retail_db" / "retail_tasks_train.jsonl"
    vocab = Vocab(load_tokenizer("default"))
    results: dict = {"config": {k: str(v) for k, v in vars(args).items()}}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        s = run_envtasks(EnvTasksConfig(out=f"{tmp}/synth", count=args.count, seed=args.seed,
                                        executor=ExecutorConfig(progress=False)))
        wall = time.perf_counter() - t0
        results["sampling"] = {"seeds": s["seeds"], "sampled": s["sampled"], "verified": s["verified"],
                               "dropped": s["dropped"], "templates": s["templates"], "kinds": s["kinds"],
                               "s_per_task_steps": s["s_per_task"], "s_per_task_wall": round(wall / s["seeds"], 4)}
        rows = [json.loads(x) for x in Path(f"{tmp}/synth/tasks.jsonl").read_text().splitlines()]
        t0 = time.perf_counter()
        d = run_envtasks(EnvTasksConfig(out=f"{tmp}/train", from_tasks=str(train), count=args.train_limit, demos=True,
                                        executor=ExecutorConfig(progress=False)))
        demo_stats = json.loads(Path(f"{tmp}/train/demos/stats.json").read_text())
        results["train_demos"] = _demo_summary(demo_stats, time.perf_counter() - t0)
        assert d["demos"]["kept"] == demo_stats["kept"]
        if args.synth_demos:
            t0 = time.perf_counter()
            r = build_env_demos(rows[:args.synth_demos], vocab)
            results["synth_demos"] = _demo_summary(r.stats, time.perf_counter() - t0)
        t0 = time.perf_counter()
        r1 = stage1_demos(vocab, limit=args.bfcl_limit)
        results["stage1_bfcl"] = _demo_summary(r1.stats, time.perf_counter() - t0)
    samp = results["sampling"]
    print(f"{'part':<26}{'in':>8}{'kept':>8}{'s/item':>10}  notes")
    print(f"{'sampled tasks':<26}{samp['seeds']:>8}{samp['verified']:>8}{samp['s_per_task_wall']:>10}  "
          f"sampled {samp['sampled']}, dropped {samp['dropped'] or 'none'}; steps {samp['s_per_task_steps']} s/task")
    for key, label in (("train_demos", "train-task demos"), ("synth_demos", "synth-task demos"),
                       ("stage1_bfcl", "stage 1 BFCL demos")):
        if key in results:
            x = results[key]
            print(f"{label:<26}{x['tried']:>8}{x['verified']:>8}{x['s_per_demo']:>10}  "
                  f"rejected {x['rejected'] or 'none'}, {x['tokens']} tokens")
    print("templates:", ", ".join(f"{k}={v}" for k, v in samp["templates"].items()))
    print("kinds:", ", ".join(f"{k}={v}" for k, v in sorted(samp["kinds"].items(), key=lambda kv: -kv[1])))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))
    print(f"-> {args.out}")


if __name__ == "__main__":
    main()
