"""What a llama.cpp backend option changes on an agent loop whose turns alternate with another prompt:
Search-o1 with Reason-in-Documents, the base model's setting in `make distill-eval`.

Side by side in one process: two backends on the same GGUF that differ only in their query options (`--a`,
`--b`; by default `prefix_states=0`, only the live context reused, what the backend did before, against
`prefix_states=8`), run question by question in alternating order over the first `--questions` MuSiQue dev
questions (each over its own paragraphs, greedy). We count the prompt tokens llama.cpp actually evaluated (at
`Llama.eval`) and time each question; we report medians, the ratio b / a, and whether every answer matched
(greedy text can differ when the option changes the arithmetic, e.g. the thread count).

    .venv/bin/python bench/prompt_states.py [--questions 12]                       # prompt states off / on
    .venv/bin/python bench/prompt_states.py --a n_threads=1 --b n_threads=2        # generation threads

Writes bench/results/prompt_states.json (or prompt_states_<a>_vs_<b>.json for other options).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import time
from pathlib import Path

from agentic_infer.backends import load_llm
from agentic_infer.engines.search_o1 import BASE_HELP, DEFAULT_SAMPLING, SearchO1
from agentic_infer.tools.retrieval.bm25 import BM25Index
from agentic_infer.tools.retrieval.corpus import question_paragraphs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "multihop" / "musique_ans_dev_150.jsonl"


def counting(llm) -> list[int]:
    """Record how many tokens each `Llama.eval` call evaluates (prompt chunks and generated tokens)."""
    seen: list[int] = []
    real = llm.llama.eval

    def evaluate(tokens):
        seen.append(len(tokens))
        return real(tokens)

    llm.llama.eval = evaluate
    return seen


async def one(llm, seen: list[int], example: dict) -> dict:
    retriever = BM25Index.from_documents(question_paragraphs(example))
    sampling = DEFAULT_SAMPLING.replace(max_tokens=256, temperature=0.0)
    engine = SearchO1(llm, retriever, max_searches=3, k=3, sampling=sampling,
                      rid_sampling=sampling.replace(max_tokens=128), **BASE_HELP)
    seen.clear()
    t0 = time.perf_counter()
    rollout = await engine.run({"question": example["question"]})
    return {"seconds": time.perf_counter() - t0, "evaluated_prompt_tokens": sum(n for n in seen if n > 1),
            "text": rollout.trajectories[0].text}


async def main(n: int, a: str, b: str) -> dict:
    rows = [json.loads(line) for line in DATA.read_text().splitlines()[:n]]
    sides = {name: load_llm(f"llamacpp://default?{opts}") for name, opts in (("a", a), ("b", b))}
    seen = {name: counting(llm) for name, llm in sides.items()}
    results: dict[str, list[dict]] = {name: [] for name in sides}
    for i, ex in enumerate(rows):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for name in order:
            results[name].append(await one(sides[name], seen[name], ex))
    out = {"questions": n, "same_text": all(x["text"] == y["text"] for x, y in zip(results["a"], results["b"]))}
    for name, rs in results.items():
        out[name] = {"options": a if name == "a" else b, "median_s": statistics.median(r["seconds"] for r in rs),
                     "median_evaluated_prompt_tokens": statistics.median(r["evaluated_prompt_tokens"] for r in rs)}
    out["ratio_s"] = out["b"]["median_s"] / out["a"]["median_s"]
    out["ratio_tokens"] = out["b"]["median_evaluated_prompt_tokens"] / out["a"]["median_evaluated_prompt_tokens"]
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--a", default="prefix_states=0", help="query options of the first backend")
    ap.add_argument("--b", default="prefix_states=8", help="query options of the second backend")
    args = ap.parse_args()
    res = asyncio.run(main(args.questions, args.a, args.b))
    default = (args.a, args.b) == ("prefix_states=0", "prefix_states=8")
    name = "prompt_states" if default else re.sub(r"[^A-Za-z0-9]+", "_", f"prompt_states_{args.a}_vs_{args.b}")
    Path("bench/results").mkdir(parents=True, exist_ok=True)
    Path(f"bench/results/{name}.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))
