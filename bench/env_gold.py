"""Every shipped gold answer through its env's verifier: TravelPlanner's 45 plans, BFCL's four subsets, ToolRL's
80 rows; how many pass, which checks fail, and the time per verify (median of 3 passes).

    .venv/bin/python bench/env_gold.py        # ~10 s; writes runs/bench/env_gold.json

TravelPlanner: the assistant message of each row (the gold plan, a Python-literal list of day records) is the
response; per check, how many of the 45 pass, and the micro/macro denominators (commonsense and hard checks
evaluated). BFCL: each row's gold calls (`gold_calls`: the first allowed value of every argument) made through
`env.call`, then `verify`. ToolRL: the row's `reward_model.ground_truth` as the response (reward 4.0 = maximum).
The retail tasks' replay is `bench/env_replay.py`. Not covered: model outputs (`bench/env_agents.py`).
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agentic_infer.envs import make_env
from agentic_infer.envs.bfcl import gold_calls, load_toolrl_rows
from agentic_infer.tools.retrieval.recipes import shared_data_dir

BFCL = {"simple": "simple_python", "multiple": "multiple", "parallel": "parallel", "irrelevance": "irrelevance"}


def timed(fn, items: list[Any], passes: int = 3) -> tuple[list[Any], float]:
    """fn over items, `passes` times; the results of the last pass and the median seconds per item."""
    per_item = []
    for _ in range(passes):
        t0 = time.perf_counter()
        out = [fn(x) for x in items]
        per_item.append((time.perf_counter() - t0) / len(items))
    return out, statistics.median(per_item)


def travelplanner(data: Path) -> dict[str, Any]:
    rows = [json.loads(line) for line in (data / "tools/travelplanner/std_travelplanner.jsonl").open()]
    envs = [make_env("travelplanner", r) for r in rows]
    verdicts, sec = timed(lambda pair: pair[0].verify(pair[1]["messages"][2]["content"]), list(zip(envs, rows)))
    passed, total, defined, failed_rows = Counter(), Counter(), Counter(), {}
    for i, v in enumerate(verdicts):
        for c in v.checks:
            defined[c.category] += 1
            if "not evaluated" in c.detail:  # hard checks of a plan that is incomplete or outside the sandbox
                continue
            total[(c.category, c.name)] += 1
            passed[(c.category, c.name)] += c.passed
        if not v.success:
            failed_rows[i] = sorted(v.failed)
    per_category = {cat: {"defined": defined[cat], "evaluated": sum(n for (c, _), n in total.items() if c == cat)}
                    for cat in ("schema", "commonsense", "hard")}
    return {"plans": len(rows), "final_pass": sum(v.success for v in verdicts),
            "checks": {f"{c}/{n}": f"{passed[(c, n)]}/{total[(c, n)]}" for c, n in sorted(total)},
            "denominators": per_category, "failed_rows": failed_rows, "s_per_verify": sec}


def bfcl(data: Path) -> dict[str, Any]:
    out = {}
    for subset, file in BFCL.items():
        path = data / f"tools/bfcl/BFCL_v4_{file}.json"
        rows = [json.loads(line) for line in path.open() if line.strip()]

        def play(row: dict[str, Any], path: Path = path) -> Any:
            env = make_env("bfcl", row, data_file=str(path))
            for name, args in gold_calls(env.ground_truth, functions=env.functions):
                env.call(name.replace(".", "_"), args)
            return env.verify("Done.")

        verdicts, sec = timed(play, rows)
        out[subset] = {"rows": len(rows), "pass": sum(v.reward == 1.0 for v in verdicts),
                       "toolrl_max": sum(v.info["toolrl"]["reward"] == 4.0 for v in verdicts), "s_per_row": sec}
    return out


def toolrl() -> dict[str, Any]:
    rows = load_toolrl_rows()
    verdicts, sec = timed(lambda r: make_env("toolrl", r).verify(r["reward_model"]["ground_truth"]), rows)
    return {"rows": len(rows), "reward_4": sum(v.reward == 4.0 for v in verdicts), "s_per_row": sec}


def main() -> None:
    data = shared_data_dir()
    result = {"travelplanner": travelplanner(data), "bfcl": bfcl(data), "toolrl": toolrl()}
    tp = result["travelplanner"]
    print(f"travelplanner: {tp['final_pass']}/{tp['plans']} gold plans pass every check; denominators "
          f"{tp['denominators']}; failing rows {tp['failed_rows']}; {tp['s_per_verify'] * 1e3:.2f} ms/verify")
    for name, count in tp["checks"].items():
        print(f"    {name:<40} {count}")
    for subset, r in result["bfcl"].items():
        print(f"bfcl {subset:<12} {r['pass']}/{r['rows']} gold pass (ToolRL 4.0: {r['toolrl_max']}), "
              f"{r['s_per_row'] * 1e6:.0f} us/row (env + calls + verify)")
    t = result["toolrl"]
    print(f"toolrl: {t['reward_4']}/{t['rows']} gold at reward 4.0, {t['s_per_row'] * 1e6:.0f} us/row")
    out = Path("runs/bench/env_gold.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
