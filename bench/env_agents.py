"""The embedded model as an agent in the envs: what its eval runs show, and a policy against a base, paired.

    .venv/bin/python bench/env_agents.py runs/envs/retail-base runs/envs/retail-sft --base retail-base
    .venv/bin/python bench/env_agents.py runs/envs/tp-base

Each argument is an `agentic eval run` directory of an env task (its `rollouts.jsonl`). Per run: tasks, success
rate (the env's verdict), mean reward, share of tasks with at least one tool call, tool calls per task, the
valid-call rate (calls the env executed without refusing, over every call the agent attempted: malformed ones,
refused ones and those past the call budget included) and the calls by status, the share of final responses the env could parse when it has a `schema` check
(TravelPlanner's plans), and the finish reasons. With `--base NAME`, every other run's success and valid-call
rate against the base on the tasks both scored: the mean paired difference with a 95% bootstrap interval.
Prints a table and writes runs/bench/env_agents.json. Not covered: running the evals (use `agentic eval run`).
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from agentic_infer.runner import iter_jsonl
from eval.stats import bootstrap_ci


def episode(rollout: dict[str, Any]) -> dict[str, Any]:
    """One task's figures from its rollout (the first trajectory: one episode per task)."""
    traj = rollout["trajectories"][0]
    steps = traj.get("steps") or []
    executed = [s for s in steps if (s.get("metadata") or {}).get("status") == "executed"]
    valid = [s for s in executed if not (s.get("metadata") or {}).get("refused")]
    checks = {c["name"]: c["passed"] for c in (traj.get("metadata") or {}).get("verdict", {}).get("checks", [])}
    statuses = Counter("refused" if (s.get("metadata") or {}).get("refused") else (s.get("metadata") or {}).get("status")
                       for s in steps)
    return {"id": rollout["example_id"], "success": float(traj["rewards"].get("success", 0.0)),
            "statuses": statuses,
            "reward": float(traj["rewards"].get("env_reward", 0.0)), "attempted": len(steps), "valid": len(valid),
            "schema": checks.get("schema"), "finish": traj.get("finish_reason"),
            "completion_tokens": traj["usage"]["completion_tokens"], "wall_s": traj["usage"]["wall_s"]}


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    attempted = sum(r["attempted"] for r in rows)
    schema = [r["schema"] for r in rows if r["schema"] is not None]
    success = [r["success"] for r in rows]
    return {"tasks": n, "success": sum(success) / n, "success_ci": bootstrap_ci(success),
            "reward": sum(r["reward"] for r in rows) / n,
            "with_call": sum(r["attempted"] > 0 for r in rows) / n, "calls_per_task": attempted / n,
            "valid_call_rate": sum(r["valid"] for r in rows) / attempted if attempted else None,
            "schema_valid": sum(schema) / len(schema) if schema else None,
            "finish": dict(Counter(r["finish"] for r in rows)),
            "calls_by_status": dict(sum((r["statuses"] for r in rows), Counter())),
            "tokens_per_task": sum(r["completion_tokens"] for r in rows) / n,
            "s_per_task": sum(r["wall_s"] for r in rows) / n}


def paired(base: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean paired differences (other − base) on the tasks both runs scored."""
    by_id = {r["id"]: r for r in base}
    pairs = [(by_id[r["id"]], r) for r in other if r["id"] in by_id]
    d_success = [o["success"] - b["success"] for b, o in pairs]
    d_calls = [(o["valid"] / o["attempted"] if o["attempted"] else 0.0)
               - (b["valid"] / b["attempted"] if b["attempted"] else 0.0) for b, o in pairs]
    return {"tasks": len(pairs), "d_success": sum(d_success) / len(pairs), "d_success_ci": bootstrap_ci(d_success),
            "d_valid_call_rate": sum(d_calls) / len(pairs), "d_valid_call_rate_ci": bootstrap_ci(d_calls)}


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.3f}"
    if isinstance(x, tuple):
        return f"[{x[0]:.3f}, {x[1]:.3f}]"
    return str(x)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path, help="eval run directories of env tasks")
    ap.add_argument("--base", help="the run (directory name) the others are paired against")
    ap.add_argument("--out", type=Path, default=Path("runs/bench/env_agents.json"))
    args = ap.parse_args()
    rows = {run.name: [episode(r) for _, r in iter_jsonl(run / "rollouts.jsonl")] for run in args.runs}
    result: dict[str, Any] = {"runs": {name: summarize(r) for name, r in rows.items()}}
    keys = ["tasks", "success", "success_ci", "reward", "with_call", "calls_per_task", "valid_call_rate",
            "schema_valid", "tokens_per_task", "s_per_task", "finish", "calls_by_status"]
    print("| run | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
    for name, s in result["runs"].items():
        print(f"| {name} | " + " | ".join(_fmt(s[k]) for k in keys) + " |")
    if args.base:
        result["paired"] = {name: paired(rows[args.base], r) for name, r in rows.items() if name != args.base}
        for name, p in result["paired"].items():
            print(f"{name} vs {args.base} on {p['tasks']} tasks: Δsuccess {p['d_success']:+.3f} "
                  f"{_fmt(p['d_success_ci'])}, Δvalid-call rate {p['d_valid_call_rate']:+.3f} "
                  f"{_fmt(p['d_valid_call_rate_ci'])}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, default=list))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
