"""What the GGUF export type of a trained policy, or a llama.cpp option, costs and changes in a game episode: f16
against q8_0 (any two of `train.model_io.OUTTYPES`, each optionally with backend query options), side by side in
one process.

    .venv/bin/python bench/gguf_outtype.py runs/rl/frozenlake/sft/model [--seeds 8] [--a f16] [--b q8_0]
    .venv/bin/python bench/gguf_outtype.py runs/rl/frozenlake/sft/model --a 'f16?n_threads_batch=2' --b f16

Exports the HF folder once per type (`export_gguf(outtype=...)`, into `runs/bench/gguf_outtype/`), loads each side
with `n_threads=--threads` (printed) plus its options, and plays the env agent of `make rl` (the recipe's agent and board
settings, read from the SFT stage's `done.json` beside the folder) greedily on validation seeds 800000.. with
each, alternating which goes first. Reports per type the median seconds and completion tokens per episode, the
tokens per second, the success rate, the ratio a / b of the median times, and on how many seeds both played the
same moves (quantisation can flip a greedy choice). Writes runs/bench/gguf_outtype.json.
Not covered: the held-out seeds (those are `make rl-eval`'s).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the train package, not bench/train.py

from agentic_infer.backends import load_llm  # noqa: E402
from agentic_infer.backends.llamacpp import LlamaCppLLM  # noqa: E402
from agentic_infer.engines.env_agent import EnvAgent, EnvAgentConfig  # noqa: E402
from agentic_infer.types import SamplingParams  # noqa: E402
from train.model_io import export_gguf  # noqa: E402
from train.rl.recipe import RLSettings  # noqa: E402


def play(llm: LlamaCppLLM, settings: RLSettings, row: dict) -> dict:
    """One greedy episode: seconds, completion tokens, success and the moves played."""
    engine = EnvAgent(llm, EnvAgentConfig(env=settings.game, sampling=SamplingParams(temperature=0.0),
                                          **settings.agent))
    t0 = time.perf_counter()
    traj = asyncio.run(engine.run(row)).trajectory
    return {"s": time.perf_counter() - t0, "tokens": traj.usage.completion_tokens,
            "success": traj.rewards["success"], "moves": [s.arguments.get("action") for s in traj.steps]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path, help="an HF folder of `make rl` (e.g. runs/rl/frozenlake/sft/model)")
    ap.add_argument("--a", default="f16")
    ap.add_argument("--b", default="q8_0")
    ap.add_argument("--seeds", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    done = args.model.parent / "done.json"
    settings = RLSettings(**json.loads(done.read_text())["settings"])
    out = Path("runs/bench/gguf_outtype")
    llms = {}
    if args.a == args.b:
        raise SystemExit(f"--a and --b are both {args.a!r}: name two different sides")
    for side in (args.a, args.b):
        kind, _, options = side.partition("?")
        path = out / f"{args.model.parent.name}-{kind}.gguf"
        if not path.is_file():
            export_gguf(args.model, path, outtype=kind)
        llms[side] = load_llm(f"llamacpp://{path.resolve()}?n_threads={args.threads}" + (f"&{options}" if options else ""))
        print(f"[gguf_outtype] {side}: {path} ({path.stat().st_size / 2**20:.0f} MiB), n_threads={args.threads}, "
              f"n_threads_batch={llms[side].llama.n_threads_batch}")
    runs: dict[str, list[dict]] = {args.a: [], args.b: []}
    for i, row in enumerate(settings.rows(settings.val_seed_start, args.seeds)):
        for side in ((args.a, args.b) if i % 2 == 0 else (args.b, args.a)):
            runs[side].append(play(llms[side], settings, row))
        print(f"[gguf_outtype] seed {row['seed']}: " + ", ".join(
            f"{k} {runs[k][-1]['s']:.1f} s {runs[k][-1]['moves']}" for k in runs))
    report = {"model": str(args.model), "threads": args.threads, "seeds": args.seeds, "agent": settings.agent,
              "board": settings.board, "sides": {}}
    for side, eps in runs.items():
        secs, toks = [e["s"] for e in eps], [e["tokens"] for e in eps]
        report["sides"][side] = {"median_s": statistics.median(secs), "median_tokens": statistics.median(toks),
                                 "tokens_per_s": sum(toks) / sum(secs),
                                 "success": sum(e["success"] for e in eps) / len(eps)}
    report["ratio_a_over_b"] = report["sides"][args.a]["median_s"] / report["sides"][args.b]["median_s"]
    report["same_moves"] = sum(x["moves"] == y["moves"] for x, y in zip(runs[args.a], runs[args.b]))
    Path("runs/bench").mkdir(parents=True, exist_ok=True)
    Path("runs/bench/gguf_outtype.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: v for k, v in report.items() if k != "agent"}, indent=2))


if __name__ == "__main__":
    main()
