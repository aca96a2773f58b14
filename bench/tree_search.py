"""Tree search benchmark on Game of 24 and HotpotQA: LATS vs a ReAct-style single rollout vs
best-of-n, and the speed-up from batching sibling expansions into one generate call.

    python bench/tree_search.py                         # 3 easiest puzzles, embedded model, ~5-10 min
    python bench/tree_search.py --puzzles 5 --tokens 6000 --backend openai://127.0.0.1:8000/v1?model=M
    python bench/tree_search.py --hotpot 4 --tokens 3000 --action-tokens 24   # HotpotQA part, ~5 min

Puzzles: the first `--puzzles` rows of ../shared/data/puzzles/game24_ranked_1_900.csv (ranked by
human solve time, easiest first); answers are checked with our own solver/checker
(`engines/tree/game24.py`), never by the model. Per puzzle and method, at an equal token budget
(`--tokens`, prompt + completion, counted by `Meter`):
- `lats-judge`: LATS with judge-only feedback (the answer = the best judged terminal);
- `lats-oracle`: LATS with oracle feedback (the checker's reward drives and stops the search);
- `react`: one rollout, one sampled action per step, no values (its own, smaller, spend);
- `bon-judge` / `bon-oracle`: independent rollouts until the budget; judge-only picks the rollout the
  LM rates best (one value call each, counted); oracle counts a success if any rollout is correct.
Reported: success rate, LLM calls and tokens per puzzle, tokens per solved puzzle; oracle and
judge-only side by side. Batching: the root's action prompt, n samples in one call vs n calls of
one sample (median of `--batch-reps` alternating repetitions), as a ratio.
Writes bench/results/tree_search.json.

`--hotpot N` runs the same comparison (same methods, same loop) on the first N questions of
../shared/data/multihop/hotpotqa_dev_distractor_150.jsonl instead: `RetrievalQAEnv` (ReAct
`search[...]` / `lookup[...]` / `finish[...]`, at most `--max-steps` actions) over a BM25 index of
the question's own 10 paragraphs (`question_retriever(example, kind="bm25")`, the distractor
setting), success = exact match (SQuAD normalisation, `agentic_infer.verify.exact_match`) of the
finish[...] answer against the gold. No batching measurement there. Writes
bench/results/tree_search_hotpot.json. Not covered: the open (pooled corpus) setting, WebShop,
programming tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.backends import load_llm  # noqa: E402
from agentic_infer.config import build_config  # noqa: E402
from agentic_infer.engines.tree import (  # noqa: E402
    LATS,
    Budget,
    BudgetExhausted,
    Game24LATSEnv,
    LATSOptions,
    Meter,
    RetrievalQAEnv,
)
from agentic_infer.engines.tree.lats import LATSConfig  # noqa: E402
from agentic_infer.engines.tree.prompting import as_chat  # noqa: E402
from agentic_infer.engines.tree.table import Tree  # noqa: E402
from agentic_infer.types import SamplingParams  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "puzzles" / "game24_ranked_1_900.csv"
HOTPOT = ROOT.parent / "shared" / "data" / "multihop" / "hotpotqa_dev_distractor_150.jsonl"
RESULTS = ROOT / "bench" / "results"


def puzzles(n: int) -> list[str]:
    if not DATA.exists():
        sys.exit(f"{DATA} is absent: the shared benchmark data is only present in dev sessions")
    with open(DATA, newline="") as f:
        return [row["Puzzles"] for _, row in zip(range(n), csv.DictReader(f))]


def game24_tasks(n: int) -> list[tuple[str, Callable[[], Any], int]]:
    """(label, environment factory, depth limit) per puzzle."""
    return [(p, lambda p=p: Game24LATSEnv(p), 4) for p in puzzles(n)]


def hotpot_tasks(n: int, max_steps: int, k: int) -> list[tuple[str, Callable[[], Any], int]]:
    """(label, environment factory, depth limit) per HotpotQA question, BM25 over its own paragraphs."""
    from agentic_infer.tools.retrieval.recipes import question_retriever, read_records

    if not HOTPOT.exists():
        sys.exit(f"{HOTPOT} is absent: the shared benchmark data is only present in dev sessions")
    out = []
    for ex in read_records(HOTPOT)[:n]:
        retriever = question_retriever(ex, kind="bm25")
        out.append((ex["_id"][:10], lambda ex=ex, r=retriever: RetrievalQAEnv(ex["question"], r, gold=ex["answer"],
                                                                              k=k, max_steps=max_steps), max_steps))
    return out


async def rollout(meter: Meter, env: Any, cfg: LATSConfig, depth: int) -> tuple[dict, Tree]:
    """One ReAct-style rollout: one sampled action per step, executed, until a terminal."""
    state = env.init_state()
    tree = Tree.new(state, env.describe(state), env=env.name, task=env.task)
    node = tree.root
    for _ in range(depth):
        if env.is_terminal(node.state):
            break
        props = await cfg.propose(tree, node, 1)
        if not props:
            break
        child = tree.add_child(node, props[0].action)
        child.state, _aux = await env.step(node.state, child.action)
        child.summary = env.describe(child.state)
        node = child
    return node.state, tree


async def run_method(llm, method: str, label: str, make_env: Callable[[], Any], depth: int, args) -> dict:
    env = make_env()
    opts = build_config(LATSOptions, overrides={"sampling": {"seed": args.seed, "max_tokens": args.action_tokens},
                                                "value_max_tokens": args.value_tokens,
                                                "reflection_max_tokens": args.value_tokens})
    t0 = time.perf_counter()
    if method.startswith("lats"):
        engine = LATS(llm, lambda _example: env, opts, n_children=args.n_children, depth_limit=depth,
                      feedback="oracle" if method == "lats-oracle" else "judge",
                      budget=Budget(iterations=None, tokens=args.tokens))
        res = await engine.run({"id": label})  # no question: the search's task is the environment's
        info = res.metadata["tree"]
        spent, ok, stop = info["budget"]["spent"], res.rewards.get("correct") == 1.0, info["stop_reason"]
    else:
        meter = Meter(llm, Budget(iterations=None, tokens=args.tokens))
        cfg = LATSConfig(meter, env, opts)
        finals: list[tuple[float, bool]] = []
        try:
            while True:
                state, tree = await rollout(meter, env, cfg, depth)
                correct = await env.gold_reward(state) == 1.0
                if method == "react":
                    finals.append((0.0, correct))
                    break
                if method == "bon-oracle":
                    finals.append((0.0, correct))
                    if correct:
                        break
                    continue
                node = tree.nodes[-1]
                lm, _ = await cfg._lm_score(tree, node)  # judge-only selection
                finals.append((lm if env.answer(state) is not None else -1.0, correct))
        except BudgetExhausted:
            pass
        spent = meter.report()["spent"]
        if method == "bon-judge":
            ok = bool(finals) and max(finals, key=lambda x: x[0])[1]
        else:
            ok = any(c for _, c in finals)
        stop = f"{len(finals)} rollout(s)"
    return {"method": method, "task": label, "solved": ok, "llm_calls": spent["llm_calls"],
            "tokens": spent["tokens"], "stop": stop, "wall_s": round(time.perf_counter() - t0, 2)}


async def batching(llm, puzzle: str, n: int, reps: int, max_tokens: int) -> dict:
    env = Game24LATSEnv(puzzle)
    cfg = LATSConfig(Meter(llm, Budget(iterations=1)), env)
    tree = Tree.new(env.init_state(), env.describe(env.init_state()), task=puzzle)
    prompt = as_chat(llm, cfg.action_prompt(tree, tree.root))
    p1 = SamplingParams(n=1, temperature=0.7, max_tokens=max_tokens, seed=1)
    batched, separate = [], []
    for r in range(reps):
        t = time.perf_counter()
        await llm.generate(prompt, p1.replace(n=n, seed=10 * r))
        batched.append(time.perf_counter() - t)
        t = time.perf_counter()
        for i in range(n):
            await llm.generate(prompt, p1.replace(seed=10 * r + i))
        separate.append(time.perf_counter() - t)
    b, s = statistics.median(batched), statistics.median(separate)
    return {"n": n, "reps": reps, "batched_s": round(b, 3), "separate_s": round(s, 3), "speedup": round(s / b, 2)}


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="llamacpp://default")
    ap.add_argument("--puzzles", type=int, default=3)
    ap.add_argument("--hotpot", type=int, default=0, metavar="N",
                    help="run the HotpotQA part on the first N questions instead of Game of 24")
    ap.add_argument("--max-steps", type=int, default=4, help="HotpotQA: actions per episode (= depth limit)")
    ap.add_argument("--k", type=int, default=2, help="HotpotQA: passages per search")
    ap.add_argument("--tokens", type=int, default=3000, help="token budget per puzzle and method")
    ap.add_argument("--n-children", type=int, default=3)
    ap.add_argument("--action-tokens", type=int, default=16)
    ap.add_argument("--value-tokens", type=int, default=24)
    ap.add_argument("--batch-reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="lats-judge,lats-oracle,react,bon-judge,bon-oracle")
    args = ap.parse_args()
    llm = load_llm(args.backend)
    methods = args.methods.split(",")
    tasks = hotpot_tasks(args.hotpot, args.max_steps, args.k) if args.hotpot else game24_tasks(args.puzzles)
    rows = []
    for label, make_env, depth in tasks:
        for m in methods:
            r = await run_method(llm, m, label, make_env, depth, args)
            rows.append(r)
            print(f"  {label:>12} {m:<12} solved={r['solved']!s:<5} calls={r['llm_calls']:>3} tokens={r['tokens']:>6} "
                  f"wall={r['wall_s']}s ({r['stop']})", flush=True)
    batch = None if args.hotpot else await batching(llm, puzzles(1)[0], args.n_children, args.batch_reps,
                                                    args.action_tokens)
    summary = {}
    print(f"\n{'method':<12} {'feedback':<8} {'success':>8} {'calls/task':>11} {'tokens/task':>12} "
          f"{'tokens/solved':>14} {'median wall s':>14}")
    for m in methods:
        rs = [r for r in rows if r["method"] == m]
        solved = sum(r["solved"] for r in rs)
        tok = sum(r["tokens"] for r in rs)
        s = {"feedback": "oracle" if "oracle" in m else ("none" if m == "react" else "judge"),
             "success": solved / len(rs), "calls_per_task": statistics.median(r["llm_calls"] for r in rs),
             "tokens_per_task": statistics.median(r["tokens"] for r in rs),
             "tokens_per_solved": tok / solved if solved else None,
             "median_wall_s": round(statistics.median(r["wall_s"] for r in rs), 2)}
        summary[m] = s
        tps = f"{s['tokens_per_solved']:.0f}" if s["tokens_per_solved"] else "–"
        print(f"{m:<12} {s['feedback']:<8} {s['success']:>8.2f} {s['calls_per_task']:>11} "
              f"{s['tokens_per_task']:>12} {tps:>14} {s['median_wall_s']:>14}")
    if batch is not None:
        print(f"\nbatching {batch['n']} sibling actions: one call {batch['batched_s']}s vs {batch['n']} calls "
              f"{batch['separate_s']}s -> speed-up x{batch['speedup']} (median of {batch['reps']})")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = {"backend": args.backend, "args": vars(args), "rows": rows, "summary": summary, "batching": batch}
    path = RESULTS / ("tree_search_hotpot.json" if args.hotpot else "tree_search.json")
    out["benchmark"] = "hotpotqa" if args.hotpot else "game24"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    asyncio.run(main())
