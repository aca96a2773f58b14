"""Baseline eval numbers with the embedded model: direct vs search-o1 on HotpotQA and MuSiQue dev.

    .venv/bin/python bench/eval_baseline.py --direct-limit 10 --search-limit 5 [--runs-dir DIR]

Runs, in one process (the model loads once), `direct` and `search-o1` with the per-question closed
corpus and with the pooled multi-hop corpus (BM25) on the shared HotpotQA distractor and MuSiQue dev
files, through `eval.runner.run_eval` (resumable: rerun with a larger limit to extend). Every run is
judged (`judge_acc`; by default by the same model with yes/no verdicts, `eval.judging`: a rerun over
finished runs only adds the verdicts). Prints a table (EM / F1 / cover-EM / judge with 95% intervals,
tokens, search calls and seconds per question) and writes
`bench/results/eval_baseline.json`. Settings are kept small for a loaded 2-core CPU (see SETTINGS).
Not a timed test; the figures depend on machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from agentic_infer.backends import load_llm
from eval.runner import RunConfig, run_eval

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / ".." / "shared" / "data" / "multihop"
FILES = {"hotpotqa": DATA / "hotpotqa_dev_distractor_150.jsonl", "musique": DATA / "musique_ans_dev_150.jsonl"}
SEARCH_OPTS = {"max_turns": 4, "max_total_tokens": 700, "doc_chars": 500,
               "first_query": "question", "rid_sampling": {"max_tokens": 96, "temperature": 0.0}}
SETTINGS = {"direct": {"sampling": {"max_tokens": 32}},
            "search-o1": {"max_searches": 2, "k": 3, "sampling": {"max_tokens": 96, "temperature": 0.0}, **SEARCH_OPTS}}


def plan(direct_limit: int, search_limit: int) -> list[tuple[str, str, str | None, int]]:
    runs = [(t, "direct", None, direct_limit) for t in FILES]
    for corpus in ("per-question", "pooled"):
        runs += [(t, "search-o1", corpus, search_limit) for t in FILES]
    return runs


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--direct-limit", type=int, default=10)
    ap.add_argument("--search-limit", type=int, default=5)
    ap.add_argument("--backend", default="llamacpp://default")
    ap.add_argument("--runs-dir", default="/tmp/agentic_eval_baseline")
    ap.add_argument("--judge", default=None, help="Judge URI (default: the backend itself, loaded once).")
    ap.add_argument("--judge-verdict", default="yes-no", help="json | yes-no (eval.judging)")
    args = ap.parse_args()
    llm = load_llm(args.backend)
    rows = []
    for task, engine, corpus, limit in plan(args.direct_limit, args.search_limit):
        out = Path(args.runs_dir) / f"{task}-{engine}-{corpus or 'none'}"
        t0 = time.perf_counter()
        direct = Path(args.runs_dir) / f"{task}-direct-none"  # Search-o1's answer backoff source
        s = await run_eval(RunConfig(task=task, data=str(FILES[task]), engine=engine, corpus=corpus, limit=limit,
                                     out=str(out), backend=args.backend,
                                     backoff=str(direct) if engine == "search-o1" else None,
                                     judge=args.judge or args.backend, judge_verdict=args.judge_verdict,
                                     settings=SETTINGS[engine]),
                           llm=llm, judge_llm=None if args.judge else llm, progress=False)
        m, t = s["metrics"], s["totals"]
        row = {"task": task, "engine": engine, "corpus": corpus or "-", "n": s["n"], "dir": str(out),
               **{k: m[k] for k in ("em", "f1", "cover_em", "judge_acc", "search_o1_em_backoff", "search_o1_f1_backoff")
                  if k in m},
               "tokens_per_q": t["completion_tokens"]["mean"], "prompt_tokens_per_q": t["prompt_tokens"]["mean"],
               "search_calls_per_q": t["search_calls_per_question"]["mean"],
               "s_per_q": t["wall_s_per_question"]["mean"], "s_per_q_median": t["wall_s_per_question"]["median"],
               "run_s": round(time.perf_counter() - t0, 1)}
        rows.append(row)
        print(f"{task:9s} {engine:9s} {row['corpus']:12s} n={row['n']:3d} EM={m['em']['mean']:.3f} "
              f"[{m['em']['ci95_low']:.2f},{m['em']['ci95_high']:.2f}] F1={m['f1']['mean']:.3f} "
              f"cover={m['cover_em']['mean']:.3f} judge={m['judge_acc']['mean']:.3f} tok/q={row['tokens_per_q']:.0f} "
              f"search/q={row['search_calls_per_q']:.2f} s/q={row['s_per_q']:.1f}", flush=True)
    out = REPO / "bench" / "results" / "eval_baseline.json"
    out.write_text(json.dumps({"backend": args.backend, "judge": args.judge or args.backend,
                               "judge_verdict": args.judge_verdict, "settings": SETTINGS, "runs": rows},
                              indent=1, default=str))
    print(f"-> {out}")


if __name__ == "__main__":
    asyncio.run(main())
