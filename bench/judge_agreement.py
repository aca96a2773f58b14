"""How far the embedded model can be trusted as an LLM judge: agreement with labelled pairs.

    .venv/bin/python bench/judge_agreement.py [--pairs 100] [--json-pairs 20] [--backend URI]

For HotpotQA and MuSiQue dev (MuSiQue carries answer aliases), builds labelled pairs from the gold answers
(`eval.judge_agreement.labelled_pairs`: half equivalent, half another question's answer) and scores them
with the judge in both verdict formats (`yes-no` on `--pairs`, `json` on the first `--json-pairs`: it
writes up to 512 tokens per verdict) and with the rule-based exact match and cover-EM on the same pairs.
Prints accuracy, balanced accuracy, TPR / TNR, ROC AUC of the verdict score, INVALID share and seconds
per verdict; writes `bench/results/judge_agreement.json` (figures only; add `--verdicts` for each one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from agentic_infer.backends import load_llm
from agentic_infer.engines.judge import make_judge
from agentic_infer.tasks import get_task
from agentic_infer.verify import MetricJudge
from eval.judge_agreement import judge_agreement, labelled_pairs

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / ".." / "shared" / "data" / "multihop"
FILES = {"hotpotqa": DATA / "hotpotqa_dev_distractor_150.jsonl", "musique": DATA / "musique_ans_dev_150.jsonl"}


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--json-pairs", type=int, default=20)
    ap.add_argument("--backend", default="llamacpp://default")
    ap.add_argument("--verdicts", action="store_true", help="Keep every verdict in the JSON output.")
    args = ap.parse_args()
    llm = load_llm(args.backend)
    rows = []
    for task, path in FILES.items():
        pairs = labelled_pairs(get_task(task).load(path), n=args.pairs, seed=0)
        judges = [("yes-no", make_judge(task, llm, verdict="yes-no"), pairs),
                  ("json", make_judge(task, llm, verdict="json"), pairs[:args.json_pairs]),
                  ("exact_match (rule)", MetricJudge("em"), pairs),
                  ("cover_em (rule)", MetricJudge("cover_em"), pairs)]
        for name, judge, subset in judges:
            t0 = time.perf_counter()
            r = await judge_agreement(judge, subset, concurrency=1)
            r["s_per_verdict"] = (time.perf_counter() - t0) / len(subset)
            if not args.verdicts:
                r.pop("verdicts")
            rows.append({"task": task, "judge": name, **r})
            f = lambda v: "  n/a" if v is None else f"{v:.3f}"  # noqa: E731
            print(f"{task:9s} {name:19s} n={r['n']:3d} acc={f(r['accuracy'])} bal={f(r['balanced_accuracy'])} "
                  f"TPR={f(r['tpr'])} TNR={f(r['tnr'])} AUC={f(r['auc'])} invalid={f(r['invalid_share'])} "
                  f"s/verdict={r['s_per_verdict']:.2f}", flush=True)
    out = REPO / "bench" / "results" / "judge_agreement.json"
    out.write_text(json.dumps({"backend": args.backend, "rows": rows}, indent=1))
    print(f"-> {out}")


if __name__ == "__main__":
    asyncio.run(main())
