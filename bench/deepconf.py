"""DeepConf benchmark: live online DeepConf vs the same budget run to completion, and a replay simulator.

    python bench/deepconf.py                       # live on the 2 shortest GSM8K questions + replay
    python bench/deepconf.py --questions 3 --max-tokens 256 --window 32
    python bench/deepconf.py --skip-live --pool traces.jsonl   # replay any recorded pool (e.g. from a GPU)

1) Live (`../shared/data/math/gsm8k_test.jsonl`, the embedded model by default): per question, the
   offline engine samples `--budget` traces to completion (the baseline: every voting method, its
   tokens), then the online engine (DeepConf-low, same seeds, same budget) streams traces and
   cancels the weak ones at the backend. Reported: tokens of each, the saving, traces stopped, and
   the accuracy of every voting method. Because trace i uses seed+i in both runs, the online run's
   token count must equal a replay of the recorded traces in their recorded order: a check that
   cancellation stops exactly where the algorithm says (`replay_check`).
2) Replay: each question's recorded pool is shuffled `--replay-runs` times and online DeepConf
   (low and high) and majority voting are replayed at several budgets, exactly as the paper
   evaluates online mode; accuracy vs tokens is plotted to bench/results/deepconf_replay.png.
   `--pool FILE` replays the rollouts written by `agentic run deepconf --mode offline --out FILE`
   (one pool per run; gold from each example's `answer`).

Writes bench/results/deepconf.json (deepconf_replay.json with --skip-live) and deepconf_pool.jsonl
(the recorded traces: replay them again with `--skip-live --pool bench/results/deepconf_pool.jsonl`). Medians and means are over questions; the machine is noisy, so
compare the two live runs' ratios, not their wall times. Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.engines.deepconf import DeepConf, ReplayTrace, replay_offline, replay_online  # noqa: E402
from agentic_infer.types import Rollout  # noqa: E402
from agentic_infer.verify import extract_boxed, last_number, math_equal  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "math" / "gsm8k_test.jsonl"
RESULTS = ROOT / "bench" / "results"


def gsm8k_gold(answer: str) -> str:
    return answer.split("####")[-1].strip().replace(",", "")


def boxed_or_last_number(text: str) -> str | None:
    """\\boxed{} when present, else the last number in the text (the small model rarely boxes)."""
    b = extract_boxed(text)
    return b if b is not None else last_number(text)


class _Recorded:
    """An "rng" whose permutation is the identity: replay a pool in its recorded (seed) order."""

    def permutation(self, n: int) -> np.ndarray:
        return np.arange(n)


_equal_cache: dict[tuple[str, str], bool] = {}


def correct(answer: str | None, gold: str) -> bool:
    if answer is None:
        return False
    k = (str(answer), gold)
    if k not in _equal_cache:
        _equal_cache[k] = math_equal(str(answer), gold)
    return _equal_cache[k]


async def prime(llm, engine: DeepConf, question: str) -> None:
    """Leave the prompt (plus one token) in llama.cpp's KV cache before a run.

    llama.cpp's logits for the last prompt token differ slightly between a batched prompt evaluation
    and the single-token re-evaluation of a prefix-cache hit, so a run's first trace would otherwise
    not be the same sample as in the other run with the same seed. After this every trace of both
    runs starts from a prefix hit.
    """
    from agentic_infer.types import SamplingParams

    await llm.generate(engine.prompt_for(question)[0], SamplingParams(max_tokens=2, temperature=0.0))


async def live(args: argparse.Namespace) -> tuple[list[dict], dict[str, tuple[list[ReplayTrace], str]]]:
    from agentic_infer.backends import load_llm

    rows = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()]
    for i, r in enumerate(rows):
        r["index"] = i
    if args.select == "shortest":  # a rule fixed before seeing any output: the shortest question texts
        rows = sorted(rows, key=lambda r: (len(r["question"]), r["index"]))
    rows = rows[: args.questions]
    llm = load_llm(args.backend)
    extract = boxed_or_last_number if args.extract == "boxed-or-last-number" else extract_boxed
    common = dict(budget=args.budget, window=args.window, tail=args.window, variant="low",
                  sampling={"max_tokens": args.max_tokens, "temperature": args.temperature, "top_p": args.top_p,
                            "seed": args.seed})  # a partial mapping: the rest of DeepConf's default sampling stays
    out, pools = [], {}
    try:
        for row in rows:
            gold = gsm8k_gold(row["answer"])
            offline_engine = DeepConf(llm, mode="offline", extract_answer=extract, **common)
            online_engine = DeepConf(llm, mode="online", warmup=args.warmup, tau=args.tau, extract_answer=extract,
                                     **common)
            await prime(llm, offline_engine, row["question"])
            t0 = time.monotonic()
            full = await offline_engine.run({"question": row["question"]})
            t_full = time.monotonic() - t0
            await prime(llm, online_engine, row["question"])
            t0 = time.monotonic()
            online = await online_engine.run({"question": row["question"]})
            t_online = time.monotonic() - t0
            pool = [ReplayTrace.from_trajectory(t) for t in full.trajectories]
            pools[f"gsm8k-{row['index']}"] = (pool, gold)
            fr, on = full.metadata["deepconf"], online.metadata["deepconf"]

            check = replay_online(pool, budget=args.budget, warmup=args.warmup, tau=args.tau, window=args.window,
                                  rng=_Recorded())
            rec = {
                "question": row["index"], "gold": gold,
                "full_tokens": fr["tokens_generated"], "online_tokens": on["tokens_generated"],
                "saving": 1 - on["tokens_generated"] / max(1, fr["tokens_generated"]),
                "online_traces": on["traces_total"], "online_stopped": on["traces_stopped_early"],
                "online_stop_reason": on["stop_reason"], "threshold": on["threshold"],
                "online_answer": online.answer, "online_correct": correct(online.answer, gold),
                "answered_traces": sum(t.answer is not None for t in full.trajectories),
                "trace_accuracy": sum(correct(t.answer, gold) for t in full.trajectories) / len(full.trajectories),
                "votes": fr["votes"], "votes_correct": {m: correct(a, gold) for m, a in fr["votes"].items()},
                "replay_check": {"tokens": check.tokens, "traces": check.traces, "stopped": check.stopped,
                                 "match": (check.tokens, check.traces, check.stopped) == (
                                     on["tokens_generated"], on["traces_total"], on["traces_stopped_early"])},
                "wall_full_s": t_full, "wall_online_s": t_online,
            }
            out.append(rec)
            print(f"q{row['index']}: full {rec['full_tokens']} tok / online {rec['online_tokens']} tok "
                  f"({rec['saving']:.0%} saved, {rec['online_stopped']} stopped), gold {gold}, online answer "
                  f"{online.answer!r}, replay match {rec['replay_check']['match']}", flush=True)
    finally:
        await llm.aclose()
    return out, pools


def load_pool(path: Path) -> dict[str, tuple[list[ReplayTrace], str]]:
    """Rollout JSON lines (one per question, its trajectories the traces), or this script's compact
    deepconf_pool.jsonl."""
    pools: dict[str, tuple[list[ReplayTrace], str]] = {}
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        d = json.loads(line)
        if "token_confs" in d:
            pools.setdefault(d["pool"], ([], d["gold"]))[0].append(ReplayTrace(d["answer"], d["token_confs"]))
            continue
        r = Rollout.from_dict(d)
        gold = str(r.example.get("answer", ""))
        pools[r.example_id] = ([ReplayTrace.from_trajectory(t) for t in r.trajectories],
                               gsm8k_gold(gold) if "####" in gold else gold)
    return pools


def replay(pools: dict[str, tuple[list[ReplayTrace], str]], args: argparse.Namespace) -> dict:
    """Accuracy and mean tokens per question at each budget, averaged over random orders."""
    sizes = min(len(p) for p, _ in pools.values())
    budgets = [b for b in args.replay_budgets if b <= sizes]
    curves: dict[str, list[dict]] = defaultdict(list)
    for b in budgets:
        warm = min(args.warmup, b)
        acc: dict[str, list[float]] = defaultdict(list)
        tok: dict[str, list[float]] = defaultdict(list)
        for pool, gold in pools.values():
            rng = np.random.default_rng(args.seed + 1)
            for _ in range(args.replay_runs):
                votes, full_tokens = replay_offline(pool, budget=b, window=args.window, tail=args.window, rng=rng)
                for m in ("majority", "top10_bottom10", "top90_bottom10"):
                    acc[m].append(correct(votes[m], gold))
                    tok[m].append(full_tokens)
                for name, variant, tau in (("online_low", "low", args.tau), ("online_high", "high", args.tau),
                                           ("online_low_no_tau", "low", None)):
                    o = replay_online(pool, budget=b, warmup=warm, variant=variant, tau=tau,
                                      window=args.window, rng=rng)
                    acc[name].append(correct(o.answer, gold))
                    tok[name].append(o.tokens)
        for m in acc:
            curves[m].append({"budget": b, "warmup": warm, "accuracy": float(np.mean(acc[m])),
                              "tokens": float(np.mean(tok[m]))})
    recorded = {}  # each pool in its recorded (seed) order at the full budget: what the live run did
    for qid, (pool, gold) in pools.items():
        b = min(args.budget, len(pool))
        row = {"full_tokens": sum(t.tokens for t in pool[:b])}
        for name, tau in (("online_low", args.tau), ("online_low_no_tau", None)):
            o = replay_online(pool, budget=b, warmup=min(args.warmup, b), tau=tau, window=args.window,
                              rng=_Recorded())
            row[name] = {"tokens": o.tokens, "traces": o.traces, "stopped": o.stopped, "answer": o.answer,
                         "correct": correct(o.answer, gold), "stop_reason": o.stop_reason,
                         "saving": 1 - o.tokens / max(1, row["full_tokens"])}
        recorded[qid] = row
    return {"budgets": budgets, "runs": args.replay_runs, "questions": len(pools), "curves": curves,
            "recorded_order": recorded}


def plot(rep: dict, path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return False
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    names = {"majority": "majority (full traces)", "top10_bottom10": "offline DeepConf-low (bottom10)",
             "top90_bottom10": "offline DeepConf-high (bottom10)", "online_low": "online DeepConf-low",
             "online_high": "online DeepConf-high", "online_low_no_tau": "online DeepConf-low, no tau stop"}
    for m, pts in rep["curves"].items():
        ax.plot([p["tokens"] for p in pts], [100 * p["accuracy"] for p in pts], marker="o", label=names.get(m, m))
        for p in pts:
            ax.annotate(str(p["budget"]), (p["tokens"], 100 * p["accuracy"]), fontsize=7, alpha=0.6)
    ax.set_xlabel("tokens generated per question (mean over random orders)")
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(-3, 103)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="llamacpp://default")
    ap.add_argument("--questions", type=int, default=2)
    ap.add_argument("--select", choices=("shortest", "first"), default="shortest",
                    help="which GSM8K test questions: the shortest texts (easiest for a 135M model) or the first")
    ap.add_argument("--budget", type=int, default=32)
    ap.add_argument("--warmup", type=int, default=16)
    ap.add_argument("--tau", type=float, default=0.95)
    ap.add_argument("--max-tokens", type=int, default=192)
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--temperature", type=float, default=0.6)
    ap.add_argument("--top-p", type=float, default=0.95)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--extract", choices=("boxed", "boxed-or-last-number"), default="boxed-or-last-number")
    ap.add_argument("--skip-live", action="store_true")
    ap.add_argument("--pool", type=Path, help="replay rollouts recorded by `agentic run deepconf --mode offline --out`")
    ap.add_argument("--replay-runs", type=int, default=64)
    ap.add_argument("--replay-budgets", type=int, nargs="+", default=[8, 16, 24, 32])
    args = ap.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    t_start = time.monotonic()
    result: dict = {"config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    pools: dict[str, tuple[list[ReplayTrace], str]] = {}
    if not args.skip_live:
        if not DATA.is_file():
            sys.exit(f"no GSM8K data at {DATA}: the live part needs ../shared/data (or pass --skip-live --pool FILE)")
        rows, pools = asyncio.run(live(args))
        full = sum(r["full_tokens"] for r in rows)
        onl = sum(r["online_tokens"] for r in rows)
        methods = list(rows[0]["votes"]) if rows else []
        result["live"] = {
            "rows": rows,
            "full_tokens_total": full, "online_tokens_total": onl, "saving_total": 1 - onl / max(1, full),
            "saving_median": statistics.median(r["saving"] for r in rows) if rows else None,
            "online_accuracy": float(np.mean([r["online_correct"] for r in rows])) if rows else None,
            "method_accuracy": {m: float(np.mean([r["votes_correct"][m] for r in rows])) for m in methods},
            "replay_check_all_match": all(r["replay_check"]["match"] for r in rows),
        }
        print(f"\n{'question':>8} {'full tok':>9} {'online tok':>10} {'saved':>6} {'stopped':>7} {'stop':>9} "
              f"{'trace acc':>9}")
        for r in rows:
            print(f"{r['question']:>8} {r['full_tokens']:>9} {r['online_tokens']:>10} {r['saving']:>6.0%} "
                  f"{r['online_stopped']:>7} {r['online_stop_reason']:>9} {r['trace_accuracy']:>9.2f}")
        lv = result["live"]
        print(f"{'total':>8} {full:>9} {onl:>10} {lv['saving_total']:>6.0%}   (median per question "
              f"{lv['saving_median']:.0%}; replay check all match: {lv['replay_check_all_match']})")
        print("\naccuracy by voting method (budget run to completion):")
        for m, a in lv["method_accuracy"].items():
            print(f"  {m:<18} {a:.2f}")
        print(f"  {'online DeepConf-low':<18} {lv['online_accuracy']:.2f}")
        with open(RESULTS / "deepconf_pool.jsonl", "w") as f:
            for qid, (pool, gold) in pools.items():
                for t in pool:
                    f.write(json.dumps({"pool": qid, "gold": gold, "answer": t.answer,
                                        "token_confs": [round(float(c), 5) for c in t.token_confs]}) + "\n")
    if args.pool:
        pools = load_pool(args.pool)
    if pools:
        rep = replay(pools, args)
        result["replay"] = rep
        print(f"\nreplay ({rep['questions']} questions x {rep['runs']} random orders): accuracy / mean tokens")
        for m, pts in rep["curves"].items():
            print(f"  {m:<18} " + "  ".join(f"B={p['budget']}: {p['accuracy']:.2f}/{p['tokens']:.0f}" for p in pts))
        print("\nrecorded order, full budget (tokens, saving vs the budget run to completion, traces stopped):")
        for qid, r in rep["recorded_order"].items():
            print(f"  {qid:<12} full {r['full_tokens']:>6}  " + "  ".join(
                f"{n} {r[n]['tokens']:>6} ({r[n]['saving']:.0%}, {r[n]['stopped']} stopped, {r[n]['stop_reason']})"
                for n in ("online_low", "online_low_no_tau")))
        png = RESULTS / "deepconf_replay.png"
        if plot(rep, png, f"DeepConf replay: {rep['questions']} GSM8K questions, SmolLM2-135M, window {args.window}"):
            result["replay"]["plot"] = str(png.relative_to(ROOT))
            print(f"plot: {png}")
    result["wall_s"] = time.monotonic() - t_start
    print(f"wall: {result['wall_s']:.0f} s")
    out = RESULTS / ("deepconf_replay.json" if args.skip_live else "deepconf.json")  # keep the live record
    out.write_text(json.dumps(result, indent=1, default=str))
    print(f"results: {out}")


if __name__ == "__main__":
    main()
