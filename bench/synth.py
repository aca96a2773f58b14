"""Synth pipeline overhead and resume saving, on the simulated continuous-batching server.

    .venv/bin/python bench/synth.py --questions 200 --samples 2 --concurrency 32

1. Records per hour: the same engine (`direct`, k seeded samples per question) over the same questions on
   the simulated server (bench/sim_server.py), (a) driven by the raw runner (`agentic_infer.runner.run_many`,
   no output) and (b) through the whole synth pipeline (datatrove LocalPipelineExecutor, 1 task: reader ->
   rollout with the SQLite request cache -> judge (em) -> filter (length) -> JSONL writer, stats.json, card).
   Overhead = raw rate / pipeline rate (target <= 1.05). Runs alternate (raw, pipe, raw, pipe, ...) and the
   best of each is kept, since these machines are noisy; the server's statistics and prefix cache are reset
   before each run.
2. Resume saving: the pipeline CLI is SIGKILLed once about half its requests have finished, then rerun; the
   backend calls of the rerun (counted in the cache's `calls` table) vs a run from scratch.
Writes bench/results/synth.json. Not covered: real GPU servers, multi-task executors, search engines.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
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
    from eval.engines import EngineContext, EvalOptions, build_engine, get_engine
    from eval.tasks import get_task

    task = get_task("nq-open")
    examples = task.load(data)
    opts = EvalOptions(max_tokens=args.max_tokens, samples=args.samples)
    llm = load_llm(uri)
    engine = build_engine(get_engine("direct"), EngineContext(llm=llm, task=task, options=opts))

    async def go() -> list:
        try:
            return await run_many(engine, examples, concurrency=args.concurrency, progress=False)
        finally:
            await llm.aclose()

    t0 = time.perf_counter()
    rollouts = asyncio.run(go())
    return time.perf_counter() - t0, sum(len(r.trajectories) for r in rollouts if r)


def pipe_cfg(uri: str, data: Path, out: Path, args: argparse.Namespace):
    from synth.pipeline import PipelineConfig

    return build_config(PipelineConfig, overrides={
        "out": str(out), "reader": {"kind": "task", "task": "nq-open", "path": str(data)},
        "rollout": {"engine": "direct", "backend": uri, "samples": args.samples, "max_tokens": args.max_tokens,
                    "concurrency": args.concurrency},
        "judge": {"metrics": ["em"]}, "filters": ["length:max_tokens=100000"], "writer": {"card": True}})


def pipeline(uri: str, data: Path, out: Path, args: argparse.Namespace) -> tuple[float, int]:
    from synth.pipeline import run_pipeline

    t0 = time.perf_counter()
    summary = run_pipeline(pipe_cfg(uri, data, out, args))
    return time.perf_counter() - t0, summary["records"]


def resume(uri: str, data: Path, out: Path, args: argparse.Namespace) -> dict:
    cmd = [sys.executable, "-m", "agentic_infer", "synth", "rollouts", "--task", "nq-open", "--data", str(data),
           "--engine", "direct", "--backend", uri, "--samples", str(args.samples), "--max-tokens", str(args.max_tokens),
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


def main() -> None:
    ap = argparse.ArgumentParser(description="synth pipeline benchmark (see module docstring)")
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "synth.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, SimServer(SimConfig(max_batch=32)) as server:
        tmp_path = Path(tmp)
        data = write_questions(tmp_path / "q.jsonl", args.questions)
        uri = server.uri(concurrency=max(64, args.concurrency))
        runs: dict[str, list[float]] = {"raw": [], "pipeline": []}
        n = {}
        for r in range(args.repeats):
            server.reset()
            s, n["raw"] = raw(uri, data, args)
            runs["raw"].append(s)
            server.reset()
            s, n["pipeline"] = pipeline(uri, data, tmp_path / f"pipe{r}", args)
            runs["pipeline"].append(s)
        server.reset()
        res = resume(uri, data, tmp_path / "resume", args)
    best = {k: min(v) for k, v in runs.items()}
    rate = {k: n[k] / best[k] * 3600 for k in best}
    result = {"questions": args.questions, "samples": args.samples, "concurrency": args.concurrency,
              "max_tokens": args.max_tokens, "runs_s": runs, "records": n,
              "records_per_hour": {k: round(v) for k, v in rate.items()},
              "overhead_ratio": round(rate["raw"] / rate["pipeline"], 3), "resume": res}
    print("| path | records | best s | records/hour |\n|---|---|---|---|")
    for k in ("raw", "pipeline"):
        print(f"| {k} | {n[k]} | {best[k]:.2f} | {rate[k]:,.0f} |")
    print(f"overhead ratio (raw rate / pipeline rate): {result['overhead_ratio']}")
    print(f"resume: from scratch {res['from_scratch_calls']} calls; killed after {res['finished_before_kill']} "
          f"finished; rerun paid {res['rerun_calls']} ({res['rerun_saving']:.0%} saved); "
          f"{res['records_after_rerun']} records")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
