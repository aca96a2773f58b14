"""The same synth pipeline and the same eval run on each executor (local, Ray, Slurm): wall time, records, equality.

    make slurm-up && .venv/bin/python bench/executors.py --questions 1000 --eval-questions 40

1. Synth: `direct` rollouts (k seeded samples per question) -> judge (em) -> filter (length) -> JSONL on the
   simulated continuous-batching server (bench/sim_server.py), `--questions` questions, once per layout: local
   with one task (the baseline), local with `--tasks` processes, Ray with `--tasks` actors (joining a head that
   this script started with `ray start`, as on a cluster; and `-private`: starting its own instance), Slurm (the one-node cluster of `make slurm-up`, a `--tasks` job array). The LLM requests in
   flight are the same in every layout (`--concurrency` split over the tasks), so the server's pace is shared and
   the difference is the executor's. Per layout: wall seconds (median of `--repeats`, the layouts alternating),
   records, whether records and merged per-step stats equal the baseline's, overhead = seconds / baseline seconds.
2. Eval: `agentic eval run`'s direct engine with the embedded model (greedy, 1 generation thread per process) on
   the first `--eval-questions` HotpotQA dev questions, one task locally vs `--tasks` shards on each executor:
   wall seconds, rows, whether the rows' predictions and metrics equal the one-task run's.
Writes bench/results/executors.json. Not covered: several machines (every layout runs on this one).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("bench_synth", ROOT / "bench" / "synth.py")
bench_synth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_synth)  # its path setup, write_questions and pipe_cfg

from sim_server import SimConfig, SimServer  # noqa: E402

HOTPOT_DEV = ROOT.parent / "shared" / "data" / "multihop" / "hotpotqa_dev_distractor_150.jsonl"
EMBEDDED = "llamacpp://default?n_threads=1"


RAY_HEAD: dict[str, str] = {}  # the address of the Ray head this benchmark started (`local_ray_head`)


def layouts(tasks: int) -> dict[str, dict]:
    """local-1 (the baseline), local processes, Ray joining the running head, Ray starting its own, Slurm."""
    return {"local-1": {"kind": "local", "tasks": 1, "workers": 1},
            f"local-{tasks}": {"kind": "local", "tasks": tasks, "workers": tasks},
            f"ray-{tasks}": {"kind": "ray", "tasks": tasks, "workers": tasks, "ray_address": RAY_HEAD.get("address")},
            f"ray-{tasks}-private": {"kind": "ray", "tasks": tasks, "workers": tasks},
            f"slurm-{tasks}": {"kind": "slurm", "tasks": tasks, "workers": tasks, "poll_s": 0.5}}


def records(out: Path) -> list[str]:
    """Every record as JSON without what differs between any two runs (its random id, its wall time)."""
    rows = []
    for f in (out / "trajectories").glob("*.jsonl"):
        for line in f.read_text().splitlines():
            t = json.loads(line)
            t.pop("id")
            t["usage"].pop("wall_s")
            rows.append(json.dumps(t, sort_keys=True))
    return sorted(rows)


def step_counts(summary: dict) -> list[tuple]:
    return [(s["step"], s["in"], s["out"], json.dumps(s["dropped"], sort_keys=True)) for s in summary["steps"]]


def synth_run(uri: str, data: Path, out: Path, executor: dict, args: argparse.Namespace) -> tuple[float, dict]:
    from synth.pipeline import run_pipeline

    cfg = bench_synth.pipe_cfg(uri, data, out, args)
    cfg.executor = type(cfg.executor)(**{**executor, "progress": False})
    cfg.rollout.concurrency = max(1, args.concurrency // executor["tasks"])
    t0 = time.perf_counter()
    summary = run_pipeline(cfg)
    return time.perf_counter() - t0, summary


def bench_synth_layouts(tmp: Path, args: argparse.Namespace) -> dict:
    runs: dict[str, list[float]] = {k: [] for k in layouts(args.tasks)}
    same: dict[str, bool] = {}
    n: dict[str, int] = {}
    with SimServer(SimConfig(max_batch=32)) as server:
        uri = server.uri(concurrency=max(64, args.concurrency))
        data = bench_synth.write_questions(tmp / "q.jsonl", args.questions)
        base_records = base_steps = None
        for r in range(args.repeats):
            names = list(runs) if r % 2 == 0 else list(reversed(runs))
            for name in names:
                server.reset()
                out = tmp / f"synth-{name}-{r}"
                s, summary = synth_run(uri, data, out, layouts(args.tasks)[name], args)
                runs[name].append(round(s, 3))
                n[name] = summary["records"]
                if name == "local-1" and base_records is None:
                    base_records, base_steps = records(out), step_counts(summary)
                if base_records is not None:
                    same[name] = same.get(name, True) and records(out) == base_records \
                        and step_counts(summary) == base_steps
    med = {k: statistics.median(v) for k, v in runs.items()}
    return {"runs_s": runs, "median_s": med, "records": n, "equal_to_local_1": same,
            "overhead_vs_local_1": {k: round(v / med["local-1"], 3) for k, v in med.items()}}


def eval_run(out: Path, executor: dict, args: argparse.Namespace) -> tuple[float, list[dict]]:
    from agentic_infer.executors import ExecutorConfig
    from eval.runner import RunConfig, run_eval
    from eval.summary import read_results

    cfg = RunConfig(task="hotpotqa", data=str(HOTPOT_DEV), engine="direct", backend=EMBEDDED, out=str(out),
                    limit=args.eval_questions, settings={"sampling": {"max_tokens": args.eval_max_tokens}},
                    executor=ExecutorConfig(**executor))
    t0 = time.perf_counter()
    asyncio.run(run_eval(cfg, progress=False))
    rows = read_results(out / "results.jsonl")
    return time.perf_counter() - t0, [{k: r[k] for k in ("id", "prediction", "metrics")} for r in rows]


def bench_eval_layouts(tmp: Path, args: argparse.Namespace) -> dict:
    secs: dict[str, float] = {}
    rows: dict[str, list[dict]] = {}
    for name, ex in layouts(args.tasks).items():
        secs[name], rows[name] = eval_run(tmp / f"eval-{name}", ex, args)
        secs[name] = round(secs[name], 3)
    return {"questions": args.eval_questions, "backend": EMBEDDED, "wall_s": secs,
            "rows": {k: len(v) for k, v in rows.items()},
            "equal_to_local_1": {k: v == rows["local-1"] for k, v in rows.items()},
            "speedup_vs_local_1": {k: round(secs["local-1"] / v, 3) for k, v in secs.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description="executors benchmark (see module docstring)")
    ap.add_argument("--questions", type=int, default=1000)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--eval-questions", type=int, default=40)
    ap.add_argument("--eval-max-tokens", type=int, default=64)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "executors.json"))
    args = ap.parse_args()
    from agentic_infer.executors import local_ray_head

    with tempfile.TemporaryDirectory() as tmp, local_ray_head(args.tasks) as address:
        RAY_HEAD["address"] = address
        synth = bench_synth_layouts(Path(tmp), args)
        ev = bench_eval_layouts(Path(tmp), args) if args.eval_questions else None
    result = {"questions": args.questions, "samples": args.samples, "concurrency": args.concurrency,
              "tasks": args.tasks, "repeats": args.repeats, "synth": synth, "eval": ev}
    print(f"synth: {args.questions} questions x {args.samples} samples on the simulated server, "
          f"median of {args.repeats}")
    print("| layout | records | median s | equal to local-1 | overhead |\n|---|---|---|---|---|")
    for k in synth["median_s"]:
        print(f"| {k} | {synth['records'][k]} | {synth['median_s'][k]:.2f} | {synth['equal_to_local_1'][k]} | "
              f"{synth['overhead_vs_local_1'][k]:.3f} |")
    if ev:
        print(f"eval: {ev['questions']} HotpotQA dev questions, direct, {EMBEDDED}")
        print("| layout | rows | wall s | equal to local-1 | speed-up |\n|---|---|---|---|---|")
        for k in ev["wall_s"]:
            print(f"| {k} | {ev['rows'][k]} | {ev['wall_s'][k]:.1f} | {ev['equal_to_local_1'][k]} | "
                  f"{ev['speedup_vs_local_1'][k]:.2f} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
