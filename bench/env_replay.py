"""Replay all 520 retail train+dev tasks through `RetailEnv`: does every task score 1 on its own gold actions,
which gold calls do the tools refuse (and why), and how fast are the tools.

    .venv/bin/python bench/env_replay.py               # ~5 s on 2 cores
    .venv/bin/python bench/env_replay.py --repeats 5

Per task: a fresh env, `env.call` of each gold action in order, then `env.verify(" ".join(outputs))`.
Reports the tasks that pass, the failures grouped by failed check, the refused gold calls grouped by tool and
refusal text (with a few examples), and speed (median over `--repeats` runs of the whole replay): gold (write)
calls per second inside `env.call`, read calls per second (get_order_details + get_user_details of each
task's orders and user, the lookups an agent makes), and tasks per second end to end (build + calls + verify).
Writes runs/bench/env_replay.json. Not covered: agents (see the env-agent engine), the simulated user.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agentic_infer.envs.retail import RetailEnv  # noqa: E402
from agentic_infer.envs.retail.db import db_folder  # noqa: E402

OUT = ROOT / "runs" / "bench" / "env_replay.json"


def load_tasks() -> list[dict[str, Any]]:
    folder = db_folder()
    return [json.loads(line) for split in ("train", "dev")
            for line in (folder / f"retail_tasks_{split}.jsonl").read_text(encoding="utf-8").splitlines()]


def replay_all(tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """One pass: verdicts, refusals and timings."""
    failures: dict[str, list[str]] = defaultdict(list)
    refusals: dict[str, list[str]] = defaultdict(list)
    passed = calls = reads = 0
    call_s = read_s = 0.0
    start = time.perf_counter()
    for row in tasks:
        env = RetailEnv(row)
        t = time.perf_counter()
        for action in row["actions"]:
            record = env.call_record(action["name"], action["kwargs"])
            if record.error:
                refusals[f"{action['name']}: {record.output}"].append(row["id"])
        call_s += time.perf_counter() - t
        calls += len(row["actions"])
        orders = {a["kwargs"]["order_id"] for a in row["actions"] if "order_id" in a["kwargs"]}
        t = time.perf_counter()
        for order_id in orders:
            env.call("get_order_details", {"order_id": order_id})
        env.call("get_user_details", {"user_id": row["user_id"]})
        read_s += time.perf_counter() - t
        reads += len(orders) + 1
        verdict = env.verify(" ".join(row["outputs"]))
        if verdict.reward == 1.0:
            passed += 1
        else:
            failures[", ".join(sorted(verdict.failed))].append(f"{row['id']}: {verdict.failed}")
    total_s = time.perf_counter() - start
    return {"passed": passed, "failures": failures, "refusals": refusals, "calls": calls, "reads": reads,
            "calls_per_s": calls / call_s, "reads_per_s": reads / read_s, "tasks_per_s": len(tasks) / total_s}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    tasks = load_tasks()
    runs = [replay_all(tasks) for _ in range(args.repeats)]
    first = runs[0]
    med = {k: statistics.median(r[k] for r in runs) for k in ("calls_per_s", "reads_per_s", "tasks_per_s")}
    refused = sum(len(v) for v in first["refusals"].values())
    by_tool = Counter(k.split(":")[0] for k, v in first["refusals"].items() for _ in v)

    print(f"{'tasks':<34}{len(tasks):>10}")
    print(f"{'pass (reward 1.0)':<34}{first['passed']:>10}")
    print(f"{'gold calls':<34}{first['calls']:>10}")
    print(f"{'gold calls refused (Error:)':<34}{refused:>10}")
    print(f"{'write calls/s (median of ' + str(args.repeats) + ')':<34}{med['calls_per_s']:>10.0f}")
    print(f"{'read calls/s':<34}{med['reads_per_s']:>10.0f}")
    print(f"{'tasks/s (build+calls+verify)':<34}{med['tasks_per_s']:>10.0f}")
    for group, items in first["failures"].items():
        print(f"FAILED [{group}] x{len(items)}: " + "; ".join(items[:3]))
    print("refusals by reason:")
    for reason, ids in sorted(first["refusals"].items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(ids):>3}  {reason}  e.g. {', '.join(ids[:3])}")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({
        "tasks": len(tasks), "passed": first["passed"], "gold_calls": first["calls"], "gold_refused": refused,
        "refused_by_tool": dict(by_tool), "refusals": first["refusals"], "failures": first["failures"],
        "repeats": args.repeats, "median": med, "runs": [{k: r[k] for k in med} for r in runs],
    }, indent=2))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
