"""Synth pipeline overhead and resume saving, on the simulated continuous-batching server.

    .venv/bin/python bench/synth.py --questions 1000 --samples 2 --concurrency 32 --repeats 3

1. Records per hour: the same engine (`direct`, k seeded samples per question) over the same questions on
   the simulated server (bench/sim_server.py), (a) driven by the raw runner (`agentic_infer.runner.run_many`,
   no output) and (b) through the whole synth pipeline (datatrove LocalPipelineExecutor, 1 task: reader ->
   rollout with the SQLite request cache -> judge (em) -> filter (length) -> JSONL writer, stats.json, card).
   Both are timed from the same start (backend URI and data file given: the backend is loaded, the file
   read) to the end, in this one process. Overhead = raw rate / pipeline rate (target <= 1.05) at the
   benchmark's size (`--questions`); the fixed start-up cost (pipeline - raw seconds on `--fixed-questions`
   questions, default 1) is reported apart, and so is the per-record ratio without it ((pipeline - fixed) /
   raw seconds at the full size). Runs alternate, the order flipped every repeat (raw, pipe, pipe, raw, ...),
   medians are kept; the server's statistics and prefix cache are reset before each run.
2. Resume saving: the pipeline CLI is SIGKILLed once about half its requests have finished, then rerun; the
   backend calls of the rerun (counted in the cache's `calls` table: finished calls only) vs from scratch.
Writes bench/results/synth.json. Not covered: real GPU servers, multi-task executors, search engines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sim_server import SimConfig, SimServer, sim_answer, sim_question  # noqa: E402

from agentic_infer.backends import load_llm  # noqa: E402
from agentic_infer.backends.cache import backend_calls, cached_keys  # noqa: E402
from agentic_infer.config import build_config  # noqa: E402
from agentic_infer.runner import run_many  # noqa: E402


def write_questions(path: Path, n: int) -> Path:
    path.write_text("".join(json.dumps({"question": sim_question(i, 0), "answer": [sim_answer(i, 0)]}) + "\n"
                            for i in range(n)))
    return path


def raw(uri: str, data: Path, args: argparse.Namespace) -> tuple[float, int]:
    """run_many alone, timed like the pipeline: from loading the backend and reading the file to the end."""
    from agentic_infer.engines.registry import EngineParts, build_engine, engine_config
    from agentic_infer.tasks import get_task

    t0 = time.perf_counter()
    task = get_task("nq-open")
    examples = task.load(data)
    cfg = engine_config("direct", {"sampling": {"max_tokens": args.max_tokens}}, samples=args.samples)
    llm = load_llm(uri)
    engine = build_engine("direct", EngineParts(llm=llm, task=task), cfg, samples=args.samples)

    async def go() -> list:
        try:
            return await run_many(engine, examples, concurrency=args.concurrency, progress=False)
        finally:
            await llm.aclose()

    rollouts = asyncio.run(go())
    return time.perf_counter() - t0, sum(len(r.trajectories) for r in rollouts if r)


def pipe_cfg(uri: str, data: Path, out: Path, args: argparse.Namespace):
    from synth.pipeline import PipelineConfig

    return build_config(PipelineConfig, overrides={
        "out": str(out), "reader": {"kind": "task", "task": "nq-open", "path": str(data)},
        "rollout": {"engine": "direct", "backend": uri, "samples": args.samples,
                    "settings": {"sampling": {"max_tokens": args.max_tokens}},
                    "concurrency": args.concurrency},
        "judge": {"metrics": ["em"]}, "filters": ["length:max_tokens=100000"], "writer": {"card": True},
        "executor": {"progress": False}})


def pipeline(uri: str, data: Path, out: Path, args: argparse.Namespace) -> tuple[float, int]:
    from synth.pipeline import run_pipeline

    t0 = time.perf_counter()
    summary = run_pipeline(pipe_cfg(uri, data, out, args))
    return time.perf_counter() - t0, summary["records"]


def resume(uri: str, data: Path, out: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, "-m", "agentic_infer", "synth", "rollouts", "--task", "nq-open", "--data", str(data),
           "--engine", "direct", "--backend", uri, "--samples", str(args.samples),
           "--set", f"rollout.settings.sampling.max_tokens={args.max_tokens}",
           "--set", f"rollout.concurrency={args.concurrency}", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    total = args.questions * args.samples
    db = out / "cache" / "llm.sqlite3"
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while proc.poll() is None and not (db.exists() and len(cached_keys(db)) >= total // 2):
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = len(backend_calls(db))
    finished = len(cached_keys(db))
    subprocess.run(cmd, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rerun = len(backend_calls(db)) - before
    records = sum(len(f.read_text().splitlines()) for f in (out / "trajectories").glob("*.jsonl"))
    return {"from_scratch_calls": total, "finished_before_kill": finished, "killed_run_calls": before,
            "rerun_calls": rerun, "rerun_saving": round(1 - rerun / total, 3), "records_after_rerun": records}


def alternate(server: SimServer, uri: str, data: Path, tmp: Path, tag: str, args: argparse.Namespace,
              repeats: int) -> tuple[dict[str, list[float]], dict[str, int]]:
    """raw and pipeline runs side by side, the order flipped every repeat; seconds per run and records."""
    runs: dict[str, list[float]] = {"raw": [], "pipeline": []}
    n: dict[str, int] = {}
    for r in range(repeats):
        for k in (("raw", "pipeline") if r % 2 == 0 else ("pipeline", "raw")):
            server.reset()
            s, n[k] = raw(uri, data, args) if k == "raw" else pipeline(uri, data, tmp / f"{tag}{r}", args)
            runs[k].append(round(s, 3))
    return runs, n


def main() -> None:
    ap = argparse.ArgumentParser(description="synth pipeline benchmark (see module docstring)")
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--fixed-questions", type=int, default=1, help="run size for the fixed start-up cost")
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fixed-repeats", type=int, default=5)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "synth.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, SimServer(SimConfig(max_batch=32)) as server:
        tmp_path = Path(tmp)
        uri = server.uri(concurrency=max(64, args.concurrency))
        small = write_questions(tmp_path / "q_small.jsonl", args.fixed_questions)
        data = write_questions(tmp_path / "q.jsonl", args.questions)
        alternate(server, uri, small, tmp_path, "warm", args, 2)  # imports and first connections, not timed
        fixed_runs, _ = alternate(server, uri, small, tmp_path, "fixed", args, args.fixed_repeats)
        runs, n = alternate(server, uri, data, tmp_path, "pipe", args, args.repeats)
        server.reset()
        res = resume(uri, data, tmp_path / "resume", args)
    med = {k: statistics.median(v) for k, v in runs.items()}
    fixed = {k: statistics.median(v) for k, v in fixed_runs.items()}
    fixed_s = fixed["pipeline"] - fixed["raw"]
    rate = {k: n[k] / med[k] * 3600 for k in med}
    result = {"questions": args.questions, "samples": args.samples, "concurrency": args.concurrency,
              "max_tokens": args.max_tokens, "repeats": args.repeats, "runs_s": runs, "records": n,
              "median_s": med, "records_per_hour": {k: round(v) for k, v in rate.items()},
              "overhead_ratio": round(rate["raw"] / rate["pipeline"], 3),
              "fixed_questions": args.fixed_questions, "fixed_runs_s": fixed_runs,
              "fixed_startup_s": round(fixed_s, 3),
              "per_record_ratio": round((med["pipeline"] - fixed_s) / med["raw"], 3), "resume": res}
    print(f"{args.questions} questions x {args.samples} samples, median of {args.repeats} alternating runs")
    print("| path | records | median s | records/hour |\n|---|---|---|---|")
    for k in ("raw", "pipeline"):
        print(f"| {k} | {n[k]} | {med[k]:.2f} | {rate[k]:,.0f} |")
    print(f"overhead ratio (raw rate / pipeline rate): {result['overhead_ratio']}")
    print(f"fixed start-up cost: {fixed_s:.3f} s (pipeline {fixed['pipeline']:.3f} s vs raw {fixed['raw']:.3f} s "
          f"on {args.fixed_questions} question(s), median of {args.fixed_repeats}); per-record ratio without it: "
          f"{result['per_record_ratio']}")
    print(f"resume: from scratch {res['from_scratch_calls']} calls; killed after {res['finished_before_kill']} "
          f"finished; rerun paid {res['rerun_calls']} ({res['rerun_saving']:.0%} saved); "
          f"{res['records_after_rerun']} records")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
