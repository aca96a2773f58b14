"""Agent scheduling: `sequential` vs `lockstep` vs `async` Search-o1 runs on a continuous-batching server.

    .venv/bin/python bench/agent_scheduling.py                     # simulated + real run, ~5 min
    .venv/bin/python bench/agent_scheduling.py --no-real           # simulated server only, ~4 min
    .venv/bin/python bench/agent_scheduling.py --sweep 16:32,16:64 # plus other SLOTS:CONCURRENCY pairs

Part 1, simulated (`bench/sim_server.py`: a child process on loopback speaking vLLM's completions
API; our `openai` backend with server-side stops, `&stops=server&flavor=vllm`): 64 multi-hop
questions whose scripted trajectories need 1-8 searches (8 of each, shuffled), Search-o1 with
Reason-in-Documents (RiD calls go to the same simulated server), BM25 (`InMemoryRetriever`) over a
small synthetic corpus. Default server: 8 slots, decode step 2 ms x (1 + 0.03 (batch - 1)), prefill
0.01 ms per new prompt token (prefix cache on). `lockstep` and `async` use the same concurrency
(16: the lockstep batch size = the async limit), run `--repeats` times interleaved (ABBA), medians are
reported; `sequential` runs once. Per scheduler: wall time, the simulator's ideal makespan (a lower
bound: see sim_server.py) and wall / ideal, utilisation (busy slots / capacity over the run), mean
running batch (time-weighted), model time per LLM call (server busy time / calls) and our overhead
per call ((wall - server busy time) / calls: with `sequential` purely client-side time, split into
the loop + retrieval + RiD prompt building outside the backend and the backend + HTTP + the
simulator's own request handling; with concurrency, the time the server had nothing to run).
Checks: async <= 1.15x ideal, async faster than lockstep, every answer right, all three schedulers
give identical trajectories.

Part 2, one real run (`--real`, default on): the first 8 of the same questions through the embedded
SmolLM2-135M behind llama.cpp's OpenAI server (`LlamaCppServer`, client-side stops), greedy, at most
2 searches and 64 tokens per call, `async` vs `lockstep`. llama.cpp's server runs one sequence at a
time, so little difference is expected; and SmolLM2-135M answers these questions without searching
(one call per question), so this measures single-turn scheduling through the same code path only.

Writes bench/results/agent_scheduling.json. Not covered: real GPU servers (vLLM/SGLang), the
streaming (client-side stops) path under load, retrieval over a real corpus.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sim_server import SimConfig, SimServer, sim_answer, sim_query, sim_question  # noqa: E402

from agentic_infer.backends import load_llm  # noqa: E402
from agentic_infer.engines.search_o1 import SearchO1  # noqa: E402
from agentic_infer.runner import run_many
from agentic_infer.tools.retrieval import Document  # noqa: E402
from agentic_infer.tools.retrieval.memory import InMemoryRetriever  # noqa: E402
from agentic_infer.types import SamplingParams, Trajectory  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "agent_scheduling.json"
FILLER = ("Records of this chain were compiled from several sources, and the archive notes that the link "
          "was confirmed twice by independent reviewers before it was added to the catalogue. ")


def make_examples(n: int, seed: int) -> list[dict[str, Any]]:
    hops = [1 + k % 8 for k in range(n)]
    random.Random(seed).shuffle(hops)
    return [{"id": f"q{i}", "question": sim_question(i, h), "answer": sim_answer(i, h), "hops": h}
            for i, h in enumerate(hops)]


def make_retriever(examples: list[dict[str, Any]]) -> InMemoryRetriever:
    docs = [Document(f"q{i}-h{h}", sim_query(i, h), f"Hop {h} of chain {i} leads to E{i:03d}_{h}. " + FILLER * 3)
            for i, ex in enumerate(examples) for h in range(1, ex["hops"] + 1)]
    return InMemoryRetriever(docs)


def abba(a: str, b: str, repeats: int) -> list[str]:
    """a, b, b, a, a, b, ...: each scheduler goes first equally often, so drift in machine load cancels."""
    return [x for k in range(repeats) for x in ((a, b) if k % 2 == 0 else (b, a))]


def signature(t: Trajectory) -> tuple:
    return (t.answer, tuple((s.kind, s.text) for s in t.segments))


async def timed_run(engine: SearchO1, examples: list, scheduler: str, concurrency: int) -> tuple[list, float]:
    t0 = time.perf_counter()
    rollouts = await run_many(engine, examples, concurrency=concurrency, scheduler=scheduler, progress=False)
    return [r.trajectory for r in rollouts], time.perf_counter() - t0


# -- part 1: the simulated server ------------------------------------------------------------------------
class TimedLLM:
    """Delegates to an LLM and sums the wall time spent inside `generate` (to split our overhead)."""

    def __init__(self, llm: Any):
        self.llm = llm
        self.inside_s = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)

    async def generate(self, prompt: Any, params: SamplingParams) -> list:
        t0 = time.perf_counter()
        try:
            return await self.llm.generate(prompt, params)
        finally:
            self.inside_s += time.perf_counter() - t0


async def transport_floor(server: SimServer, llm: Any, calls: int = 40) -> dict[str, float]:
    """Median round trip of a 1-token request: through our backend vs a bare httpx POST (same body)."""
    import httpx

    prompt = "hello " * 200
    params = SamplingParams(max_tokens=1, temperature=0.0, logprobs=0, stop=("x",), include_stop=True)
    body = {"model": server.cfg.model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": 0,
            "stop": ["x"]}
    ours, raw = [], []
    async with httpx.AsyncClient() as client:
        for _ in range(calls):  # interleaved
            t0 = time.perf_counter()
            await llm.generate(prompt, params)
            ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            (await client.post(f"{server.base_url}/v1/completions", json=body)).raise_for_status()
            raw.append(time.perf_counter() - t0)
    planned = server.cfg.step_ms(1) + server.cfg.prefill_ms_per_token * (len(prompt) // server.cfg.chars_per_token)
    return {"planned_model_ms": planned, "ours_ms": 1000 * statistics.median(ours),
            "raw_httpx_ms": 1000 * statistics.median(raw)}


async def simulate(args: argparse.Namespace, slots: int, concurrency: int, order: list[str]) -> dict[str, Any]:
    """Run the schedulers in `order` against one simulated server; per-scheduler rows and signatures."""
    cfg = SimConfig(max_batch=slots, decode_ms=args.decode_ms, alpha=args.alpha,
                    prefill_ms_per_token=args.prefill_ms, seed=args.seed)
    examples = make_examples(args.questions, args.seed)
    retriever = make_retriever(examples)
    runs: dict[str, list[dict[str, Any]]] = {}
    sigs: dict[str, list] = {}
    with SimServer(cfg) as server:
        llm = TimedLLM(load_llm(server.uri(concurrency=max(64, concurrency))))
        engine = SearchO1(llm, retriever, max_searches=10, k=args.k,
                          sampling=SamplingParams(max_tokens=1024, temperature=0.0, logprobs=0))
        await timed_run(engine, examples[:4], "async", 4)  # warm-up: connections, tokenizer
        floor = await transport_floor(server, llm)
        for scheduler in order:
            server.reset()
            llm.inside_s = 0.0
            trajs, wall = await timed_run(engine, examples, scheduler, concurrency)
            await asyncio.sleep(0.05)
            st = server.stats()
            calls = st["requests"]
            row = {"scheduler": scheduler, "slots": slots, "concurrency": concurrency, "wall_s": wall,
                   "llm_calls": calls, "correct": sum(t.answer == ex["answer"] for t, ex in zip(trajs, examples)),
                   "searches": sum(t.metadata["actions"] for t in trajs),
                   "utilisation": st["utilisation"], "mean_batch": st["busy_slot_s"] / st["busy_s"],
                   "ideal_makespan_s": st["ideal_makespan_s"], "x_ideal": wall / st["ideal_makespan_s"],
                   "model_ms_per_call": 1000 * st["busy_s"] / calls,
                   "overhead_ms_per_call": 1000 * (wall - st["busy_s"]) / calls,
                   # meaningful for `sequential` only (no overlap): time in our loop and tools vs in the backend
                   "outside_backend_ms_per_call": 1000 * (wall - llm.inside_s) / calls,
                   "backend_minus_model_ms_per_call": 1000 * (llm.inside_s - st["busy_s"]) / calls,
                   "server": st}
            runs.setdefault(scheduler, []).append(row)
            sigs.setdefault(scheduler, [signature(t) for t in trajs])
            print(f"  {slots:>2} slots, concurrency {concurrency:>2}: {scheduler:<10} {wall:7.2f} s  "
                  f"util {st['utilisation']:.2f}  x ideal {row['x_ideal']:.2f}", flush=True)
        await llm.aclose()
    return {"runs": runs, "sigs": sigs, "transport": floor}


def medians(runs: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, float]]:
    return {s: {k: statistics.median(r[k] for r in rows) for k, v in rows[0].items() if isinstance(v, (int, float))}
            for s, rows in runs.items()}


async def simulated(args: argparse.Namespace) -> dict[str, Any]:
    order = [s for s in ["sequential"] + abba("lockstep", "async", args.repeats) if s in args.schedulers]
    main = await simulate(args, args.max_batch, args.concurrency, order)
    med = medians(main["runs"])
    sigs = main["sigs"]
    checks: dict[str, bool] = {
        "all_answers_correct": all(r["correct"] == args.questions for rows in main["runs"].values() for r in rows),
        "identical_trajectories": all(v == next(iter(sigs.values())) for v in sigs.values()),
    }
    if "async" in med:
        checks["async_within_1.15x_ideal"] = med["async"]["x_ideal"] <= 1.15
    if "async" in med and "lockstep" in med:
        checks["async_faster_than_lockstep"] = med["async"]["wall_s"] < med["lockstep"]["wall_s"]
    sweep = []
    for pair in args.sweep:
        slots, concurrency = (int(x) for x in pair.split(":"))
        extra = await simulate(args, slots, concurrency, ["lockstep", "async"])
        sweep += [r for rows in extra["runs"].values() for r in rows]
    return {"medians": med, "runs": main["runs"], "checks": checks, "sweep": sweep, "transport": main["transport"],
            "sim_config": next(iter(main["runs"].values()))[0]["server"]["config"]}


# -- part 2: one real run ---------------------------------------------------------------------------------
async def real(args: argparse.Namespace) -> dict[str, Any]:
    from agentic_infer.backends.llamacpp_server import LlamaCppServer

    examples = make_examples(args.questions, args.seed)[:args.real_questions]
    retriever = make_retriever(make_examples(args.questions, args.seed))
    rows: list[dict[str, Any]] = []
    sigs: dict[str, list] = {}
    with LlamaCppServer(n_ctx=4096) as server:
        llm = load_llm(server.uri + f"&concurrency={args.real_questions}")
        # the small model answers from memory unless its turn opens with a search tag (as in `make demo`)
        engine = SearchO1(llm, retriever, max_searches=args.real_max_searches, k=3, max_turns=4,
                          worked_example=True, assistant_prefix="Let me search for this.\n<|begin_search_query|>",
                          rid_prefill=True,
                          sampling=SamplingParams(max_tokens=args.real_max_tokens, temperature=0.0, logprobs=0),
                          rid_sampling=SamplingParams(max_tokens=args.real_max_tokens, temperature=0.0))
        await timed_run(engine, examples[:1], "async", 1)  # warm-up
        for scheduler in abba("async", "lockstep", args.real_repeats):
            trajs, wall = await timed_run(engine, examples, scheduler, args.real_questions)
            rows.append({"scheduler": scheduler, "wall_s": wall, "llm_calls": sum(t.usage.llm_calls for t in trajs),
                         "completion_tokens": sum(t.usage.completion_tokens for t in trajs),
                         "searches": sum(t.metadata["actions"] for t in trajs),
                         "finish_reasons": sorted(t.finish_reason for t in trajs)})
            sigs.setdefault(scheduler, [signature(t) for t in trajs])
            print(f"  real {scheduler:<10} {wall:7.2f} s  {rows[-1]['llm_calls']} calls", flush=True)
        await llm.aclose()
    med = {s: statistics.median(r["wall_s"] for r in rows if r["scheduler"] == s) for s in ("async", "lockstep")}
    return {"questions": len(examples), "max_searches": args.real_max_searches, "max_tokens": args.real_max_tokens,
            "concurrency": args.real_questions, "runs": rows, "median_wall_s": med,
            "lockstep_over_async": med["lockstep"] / med["async"],
            "identical_trajectories": sigs.get("async") == sigs.get("lockstep")}


def table(sim: dict[str, Any] | None, real_part: dict[str, Any] | None) -> str:
    lines = []
    if sim is not None:
        head = (f"{'scheduler':<11}{'slots':>6}{'conc':>6}{'wall s':>8}{'x ideal':>9}{'util':>7}{'batch':>7}"
                f"{'calls':>7}{'model ms/call':>15}{'ours ms/call':>14}")
        lines += [head, "-" * len(head)]
        rows = [(s, m) for s, m in sim["medians"].items()] + [(r["scheduler"], r) for r in sim["sweep"]]
        for s, m in rows:
            lines.append(f"{s:<11}{m['slots']:6.0f}{m['concurrency']:6.0f}{m['wall_s']:8.2f}{m['x_ideal']:9.2f}"
                         f"{m['utilisation']:7.2f}{m['mean_batch']:7.1f}{m['llm_calls']:7.0f}"
                         f"{m['model_ms_per_call']:15.1f}{m['overhead_ms_per_call']:14.1f}")
        med = sim["medians"]
        any_row = next(iter(med.values()))
        lines.append(f"ideal makespan (simulator lower bound): {any_row['ideal_makespan_s']:.2f} s")
        if "async" in med:
            for other in ("lockstep", "sequential"):
                if other in med:
                    lines.append(f"{other}/async wall: {med[other]['wall_s'] / med['async']['wall_s']:.2f}x")
        if "sequential" in med:
            m = med["sequential"]
            lines.append(f"sequential per call: model {m['model_ms_per_call']:.1f} ms; ours {m['overhead_ms_per_call']:.1f} ms "
                         f"= {m['outside_backend_ms_per_call']:.1f} ms loop+tools outside the backend + "
                         f"{m['backend_minus_model_ms_per_call']:.1f} ms backend+HTTP+simulator request handling")
        tr = sim["transport"]
        lines.append(f"1-token request round trip (model {tr['planned_model_ms']:.1f} ms): our backend "
                     f"{tr['ours_ms']:.1f} ms, bare httpx {tr['raw_httpx_ms']:.1f} ms")
        lines += [f"check {k}: {'PASS' if v else 'FAIL'}" for k, v in sim["checks"].items()]
    if real_part is not None:
        lines.append(f"real (SmolLM2 on llama.cpp server, {real_part['questions']} questions, concurrency "
                     f"{real_part['concurrency']}): async {real_part['median_wall_s']['async']:.1f} s, lockstep "
                     f"{real_part['median_wall_s']['lockstep']:.1f} s (lockstep/async "
                     f"{real_part['lockstep_over_async']:.2f}x; identical trajectories: "
                     f"{real_part['identical_trajectories']})")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description="Agent scheduling benchmark (see module docstring)")
    ap.add_argument("--questions", type=int, default=64)
    ap.add_argument("--concurrency", type=int, default=16, help="async limit and lockstep batch size")
    ap.add_argument("--max-batch", type=int, default=8, help="simulated server slots")
    ap.add_argument("--decode-ms", type=float, default=2.0)
    ap.add_argument("--alpha", type=float, default=0.03)
    ap.add_argument("--prefill-ms", type=float, default=0.01, help="per new prompt token")
    ap.add_argument("--k", type=int, default=5, help="Documents per search.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--schedulers", type=lambda v: v.split(","), default=["sequential", "lockstep", "async"],
                    help="comma-separated subset (the checks need all three)")
    ap.add_argument("--repeats", type=int, default=2, help="lockstep/async repetitions (sequential runs once)")
    ap.add_argument("--sweep", type=lambda v: v.split(",") if v else [], default=[],
                    help="extra SLOTS:CONCURRENCY pairs, lockstep + async once each (e.g. 16:32,16:64)")
    ap.add_argument("--sim", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--real", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--real-questions", type=int, default=8)
    ap.add_argument("--real-max-searches", type=int, default=2)
    ap.add_argument("--real-max-tokens", type=int, default=64)
    ap.add_argument("--real-repeats", type=int, default=2)
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    started = time.perf_counter()
    sim = None
    if args.sim:
        print(f"simulated server: {args.questions} questions, concurrency {args.concurrency}, "
              f"{args.max_batch} slots", flush=True)
        sim = await simulated(args)
    real_part = None
    if args.real:
        print(f"real run: {args.real_questions} questions on SmolLM2 (llama.cpp server)", flush=True)
        real_part = await real(args)
    report = table(sim, real_part)
    print(report)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"args": vars(args), "simulated": sim, "real": real_part,
                                   "table": report.splitlines(),
                                   "total_s": time.perf_counter() - started, "cpus": os.cpu_count(),
                                   "loadavg_at_end": os.getloadavg()}, indent=1, default=str))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    asyncio.run(main())
