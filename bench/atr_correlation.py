"""Atom-Searcher's Atomic Thought Reward against the outcome: does ATR rank trajectories as final F1 does?

    .venv/bin/python bench/atr_correlation.py [--backend URI] [--limit 150] [--out runs/atom/musique-dev]
    .venv/bin/python bench/atr_correlation.py --existing --out RUN_DIR   # an eval run made elsewhere (eval compare)

Runs `agentic eval run --task musique --data musique_ans_dev_150.jsonl --engine search-o1 --set
dialect=atom_searcher --set worked_example=true --corpus per-question ...` (BM25 over each question's own paragraphs; the Atom-Searcher dialect: JSON web_search calls, a pre-filled `<think>`, atomic
thoughts as the model's own tags; eval resumes a stopped run), then scores every trajectory with the offline RRM
against its gold decomposition (`train.rewards.atomic.OfflineRRM`), with atomic thoughts and with the paper's
ablation (the whole `<think>` as one atom), and reports Spearman's rho between ATR and F1 over the trajectories
the RRM scored, with a 95% bootstrap interval over questions, the atoms per trajectory by tag, and how many
trajectories had no scored atom. Writes `OUT/atr.json` and prints a markdown table. `--existing` runs nothing and
analyses the MuSiQue dev run already in `--out` (e.g. a trained atom policy's, from `agentic eval compare`).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentic_infer.tasks import get_task  # noqa: E402
from agentic_infer.types import Rollout  # noqa: E402
from agentic_infer.verify import score  # noqa: E402
from synth.demos.plans import gold_plan  # noqa: E402
from train.rewards.atomic import OfflineRRM, atomic_thought_reward  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multihop" / "musique_ans_dev_150.jsonl"
ENGINE_SETTINGS = ("dialect=atom_searcher", "worked_example=true", "k=3", "passage_chars=400", "max_searches=4",
                   "sampling.max_tokens=200")


def ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties averaged (Spearman's convention)."""
    order = np.argsort(x, kind="mergesort")
    r = np.empty(len(x))
    r[order] = np.arange(len(x), dtype=float)
    for v in np.unique(x):
        tied = x == v
        r[tied] = r[tied].mean()
    return r


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rho (nan when either side is constant)."""
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def bootstrap_rho(a: np.ndarray, b: np.ndarray, *, n_boot: int = 1000, seed: int = 0) -> tuple[float, float, float]:
    """(low, high, share of resamples where rho is undefined): the percentile interval over the defined ones. A
    high undefined share means the interval rests on the few items that vary (report it with the interval)."""
    rng = np.random.default_rng(seed)
    rhos = [spearman(a[i], b[i]) for i in rng.integers(0, len(a), size=(n_boot, len(a)))]
    ok = [r for r in rhos if not np.isnan(r)]
    undefined = 1 - len(ok) / n_boot
    if not ok:
        return float("nan"), float("nan"), undefined
    return float(np.quantile(ok, 0.025)), float(np.quantile(ok, 0.975)), undefined


def run_eval(args: argparse.Namespace) -> None:
    cmd = [sys.executable, "-m", "agentic_infer", "eval", "run", "--task", "musique", "--data", str(args.data),
           "--engine", "search-o1", "--corpus", "per-question", "--backend", args.backend, "--limit", str(args.limit),
           "--out", str(args.out),
           "--quiet"]
    for kv in ENGINE_SETTINGS:
        cmd += ["--set", kv]
    subprocess.run(cmd, check=True)


def analyse(args: argparse.Namespace) -> dict:
    examples = {e["id"]: e for e in get_task("musique").load(args.data, limit=args.limit)}
    rows = []
    for line in (args.out / "rollouts.jsonl").read_text().splitlines():
        r = Rollout.from_json(line)
        ex = examples[r.example_id]
        plan, why = gold_plan(ex)
        t = r.trajectory
        if plan is None or t is None:
            continue
        text = t.completion_text
        atoms = OfflineRRM(plan).score(text)
        whole = OfflineRRM(plan, whole_think=True).score(text)
        rows.append({"id": r.example_id, "f1": float(score("f1", r.answer, ex["gold"])) if r.answer else 0.0,
                     "atr": atomic_thought_reward(atoms), "atr_whole": atomic_thought_reward(whole),
                     "tags": Counter(a.tag for a in atoms), "scored": sum(a.score is not None for a in atoms)})
    out = {"n": len(rows), "backend": args.backend, "engine_settings": list(ENGINE_SETTINGS),
           "mean_f1": float(np.mean([r["f1"] for r in rows])) if rows else float("nan"),
           "atoms_per_trajectory": {k: v / max(len(rows), 1) for k, v in
                                    sum((r["tags"] for r in rows), Counter()).most_common()}}
    for key in ("atr", "atr_whole"):
        kept = [r for r in rows if r[key] is not None]
        a, b = np.array([r[key] for r in kept]), np.array([r["f1"] for r in kept])
        rho = spearman(a, b) if len(kept) > 2 else float("nan")
        lo, hi, undefined = bootstrap_rho(a, b) if len(kept) > 2 else (float("nan"), float("nan"), 1.0)
        out[key] = {"n_scored": len(kept), "no_scored_atom": len(rows) - len(kept), "rho": rho, "ci": [lo, hi],
                    "undefined_resamples": undefined, "f1_positive": int((b > 0).sum()),
                    "mean": float(a.mean()) if len(kept) else float("nan")}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--backend", default="llamacpp://default?n_threads=2")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--limit", type=int, default=150)
    p.add_argument("--out", type=Path, default=Path("runs/atom/musique-dev"))
    p.add_argument("--existing", action="store_true", help="analyse the eval run in --out; run nothing")
    args = p.parse_args()
    if args.existing:
        if not (args.out / "rollouts.jsonl").is_file():
            raise SystemExit(f"--existing: no {args.out / 'rollouts.jsonl'}; pass an eval run folder of MuSiQue dev")
    else:
        run_eval(args)
    out = analyse(args)
    (args.out / "atr.json").write_text(json.dumps(out, indent=2))
    print("| RRM | trajectories scored | of them F1 > 0 | no scored atom | mean ATR | Spearman rho (ATR, F1) "
          "[95% CI] | resamples with rho undefined |\n|---|---|---|---|---|---|---|")
    for key, name in (("atr", "atomic thoughts"), ("atr_whole", "whole <think> (ablation)")):
        s = out[key]
        print(f"| {name} | {s['n_scored']} | {s['f1_positive']} | {s['no_scored_atom']} | {s['mean']:.3f} | "
              f"{s['rho']:.3f} [{s['ci'][0]:.3f}, {s['ci'][1]:.3f}] | {s['undefined_resamples']:.0%} |")
    print(f"\n{out['n']} trajectories, mean F1 {out['mean_f1']:.3f}; atoms per trajectory: {out['atoms_per_trajectory']}")


if __name__ == "__main__":
    main()
