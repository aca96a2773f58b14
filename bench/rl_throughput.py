"""Where an RL step's rollout time goes: env-agent episodes one at a time vs decoded together, side by side.

    .venv/bin/python bench/rl_throughput.py [--model runs/rl/frozenlake/sft/model] [--episodes 16] [--repeats 3]

The same policy (the RL recipe's SFT checkpoint by default), the same seeds and sampling (temperature 1, the
recipe's turn budget), FrozenLake episodes through the env agent on the hf backend over one in-memory model:
`batch=1` (one sequence at a time, every turn prefilled from scratch: the path before lockstep batching) and
`batch=N` (N episodes at once, their turns decoded together, each turn prefilling only its new tokens). Prints
the median seconds over `--repeats`, episodes per second, generated tokens per second, the prompt tokens
reused, and the ratio; writes runs/bench/rl_throughput.json. Threads and precision are set and printed (fp32
weights, `torch.set_num_threads`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the train package, not bench/train.py


def episodes(llm, n: int, seed0: int, agent: dict) -> tuple[float, list]:
    from agentic_infer.engines.env_agent import EnvAgent, EnvAgentConfig
    from agentic_infer.types import SamplingParams

    cfg = EnvAgentConfig(env="frozenlake", **agent, sampling=SamplingParams(temperature=1.0, logprobs=0))
    gate = asyncio.Semaphore(llm.max_concurrency or 1)

    async def one(i: int):
        async with gate:
            episode_cfg = dataclasses.replace(cfg, sampling=cfg.sampling.replace(seed=i))
            return (await EnvAgent(llm, episode_cfg).run({"id": str(i), "seed": seed0 + i})).trajectory

    async def go():
        return await asyncio.gather(*(one(i) for i in range(n)))

    t0 = time.perf_counter()
    trajs = asyncio.run(go())
    return time.perf_counter() - t0, trajs


def main() -> None:
    import torch

    from agentic_infer.backends.hf import HFLLM
    from train.model_io import load_trainable

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="runs/rl/frozenlake/sft/model")
    ap.add_argument("--episodes", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=min(os.cpu_count() or 1, 8))
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = load_trainable(args.model)
    model.eval()
    print(f"model {args.model}, fp32 weights, {torch.get_num_threads()} torch threads, {args.episodes} episodes")
    agent = {"max_calls": 10, "max_turns": 12, "max_tokens_per_turn": 48}
    rows: dict[str, list] = {"batch=1": [], f"batch={args.episodes}": []}
    stats: dict[str, dict] = {}
    for r in range(args.repeats):
        for name, batch in (("batch=1", 1), (f"batch={args.episodes}", args.episodes)):
            llm = HFLLM.from_model(model, tok, batch=batch)
            with torch.inference_mode():
                secs, trajs = episodes(llm, args.episodes, 10000 + 100 * r, agent)
            rows[name].append(secs)
            gen = sum(t.usage.completion_tokens for t in trajs)
            stats.setdefault(name, {"generated": [], "prompt": [], "reused": []})
            stats[name]["generated"].append(gen)
            stats[name]["prompt"].append(sum(t.usage.prompt_tokens for t in trajs))
            stats[name]["reused"].append(llm._batcher.store.reused if llm._batcher else 0)
            print(f"repeat {r} {name}: {secs:.1f} s, {gen} tokens generated", flush=True)
    out = {}
    for name, secs in rows.items():
        med = statistics.median(secs)
        gen = statistics.median(stats[name]["generated"])
        out[name] = {"median_s": round(med, 1), "episodes_per_s": round(args.episodes / med, 3),
                     "generated_tokens_per_s": round(gen / med, 1), "prompt_tokens": stats[name]["prompt"],
                     "reused_prompt_tokens": stats[name]["reused"], "runs_s": [round(x, 1) for x in secs]}
    names = list(out)
    out["speedup"] = round(out[names[0]]["median_s"] / out[names[1]]["median_s"], 2)
    for name in names:
        o = out[name]
        print(f"{name:>10}: {o['median_s']:7.1f} s median, {o['episodes_per_s']:.3f} episodes/s, "
              f"{o['generated_tokens_per_s']:.1f} generated tokens/s, reused {o['reused_prompt_tokens']}")
    print(f"speedup {out['speedup']}x")
    Path("runs/bench").mkdir(parents=True, exist_ok=True)
    Path("runs/bench/rl_throughput.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
