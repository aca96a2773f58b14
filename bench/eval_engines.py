"""Every eval engine through the runner with the embedded model: cot, tir, deepconf, lats, rap on real data.

    .venv/bin/python bench/eval_engines.py [--scale 1.0] [--runs-dir DIR] [--backend URI] [--judge URI]

Runs, in one process (the model loads once), `eval.runner.run_eval` for each (task, engine) in PLAN on the
shared GSM8K test, Game of 24 and HotpotQA distractor dev files: the same code path as `agentic eval run`
(resumable; rerun to continue). `--scale` multiplies the question counts. QA runs are also judged (by
default by the same model with yes/no verdicts, `eval.judging`). Prints a table (primary metric with 95%
interval, LLM calls, completion / prompt tokens and seconds per question, stop reasons of the tree
searches) and writes `bench/results/eval_engines.json`. Budgets are small for a 2-core CPU (see PLAN);
the figures depend on machine load. Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections import Counter
from pathlib import Path

from agentic_infer.backends import load_llm
from agentic_infer.tasks import get_task
from eval.runner import RunConfig, run_eval
from eval.summary import read_results

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / ".." / "shared" / "data"
FILES = {"gsm8k": DATA / "math" / "gsm8k_test.jsonl", "game24": DATA / "puzzles" / "game24_ranked_1_900.csv",
         "hotpotqa": DATA / "multihop" / "hotpotqa_dev_distractor_150.jsonl"}
# (task, engine, questions, RunConfig settings)
PLAN = [
    ("gsm8k", "cot", 20, dict(settings={"sampling": {"max_tokens": 256}})),
    ("gsm8k", "tir", 20, dict(settings={"sampling": {"max_tokens": 256}, "max_tool_calls": 2})),
    ("gsm8k", "deepconf", 5, dict(samples=8, settings={"sampling": {"max_tokens": 256}, "window": 32, "tail": 32})),
    ("gsm8k", "lats", 3, dict(settings={"budget": {"tokens": 2500, "iterations": None}})),
    ("gsm8k", "rap", 3, dict(settings={"budget": {"tokens": 4000, "iterations": None}})),
    ("game24", "lats", 5, dict(settings={"budget": {"tokens": 2000, "iterations": None}})),
    ("game24", "rap", 5, dict(settings={"budget": {"tokens": 2000, "iterations": None}})),
    ("hotpotqa", "lats", 3, dict(corpus="per-question",
                                 settings={"budget": {"tokens": 3000, "iterations": None}, "sampling": {"max_tokens": 24}})),
]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0, help="Multiply every question count (at least 1 each).")
    ap.add_argument("--backend", default="llamacpp://default")
    ap.add_argument("--judge", default=None, help="Judge URI for QA runs (default: the backend itself, yes-no).")
    ap.add_argument("--judge-verdict", default="yes-no")
    ap.add_argument("--runs-dir", default="/tmp/agentic_eval_engines")
    args = ap.parse_args()
    llm = load_llm(args.backend)
    rows = []
    for task, engine, n, settings in PLAN:
        limit = max(1, round(n * args.scale))
        out = Path(args.runs_dir) / f"{task}-{engine}"
        qa = task == "hotpotqa"
        cfg = RunConfig(task=task, data=str(FILES[task]), engine=engine, limit=limit, out=str(out),
                        backend=args.backend, **settings,
                        **({"judge": args.judge or args.backend, "judge_verdict": args.judge_verdict} if qa else {}))
        t0 = time.perf_counter()
        s = await run_eval(cfg, llm=llm, judge_llm=llm if qa and not args.judge else None, progress=False)
        m, t = s["metrics"], s["totals"]
        primary = get_task(task).primary
        results = read_results(out / "results.jsonl")
        stops = Counter((r.get("tree") or {}).get("stop_reason") for r in results if r.get("tree"))
        row = {"task": task, "engine": engine, "n": s["n"], "dir": str(out), "primary": primary,
               **{k: m[k] for k in m}, "answered": sum(r["prediction"] is not None for r in results) / len(results),
               "llm_calls_per_q": sum(r["llm_calls"] for r in results) / len(results),
               "tokens_per_q": t["completion_tokens"]["mean"], "prompt_tokens_per_q": t["prompt_tokens"]["mean"],
               "tool_calls_per_q": sum(r["tool_calls"] for r in results) / len(results),
               "s_per_q": t["wall_s_per_question"]["mean"], "tree_stop_reasons": dict(stops),
               "run_s": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        pm = m[primary]
        judge = f" judge={m['judge_acc']['mean']:.3f}" if "judge_acc" in m else ""
        print(f"{task:8s} {engine:8s} n={row['n']:2d} {primary}={pm['mean']:.3f} [{pm['ci95_low']:.2f},"
              f"{pm['ci95_high']:.2f}]{judge} answered={row['answered']:.2f} calls/q={row['llm_calls_per_q']:.1f} "
              f"tok/q={row['tokens_per_q']:.0f} prompt/q={row['prompt_tokens_per_q']:.0f} "
              f"tools/q={row['tool_calls_per_q']:.2f} s/q={row['s_per_q']:.1f} {dict(stops) or ''}", flush=True)
    path = REPO / "bench" / "results" / "eval_engines.json"
    path.write_text(json.dumps({"backend": args.backend, "plan": [p[:3] + (p[3],) for p in PLAN], "runs": rows},
                               indent=1, default=str))
    print(f"-> {path}")


if __name__ == "__main__":
    asyncio.run(main())
