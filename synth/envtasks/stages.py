"""AgentScaler's two training stages as data: general function calling (BFCL's gold calls), then the domain.

    s1 = stage1_demos(vocab)                                   # DemoResult: BFCL rows, gold calls as demos
    s2 = stage2_demos(vocab, synth_rows=rows, train_file=".../retail_tasks_train.jsonl")
    write_stages("out/stages", s1, s2)     # out/stages/stage1/, out/stages/stage2/: trajectories.jsonl + stats.json

    agentic synth envtasks --env retail --count 200 --seed 0 --out DIR --demos --stage1

Stage 1 (general function calling): every row of BFCL's single-turn files (`STAGE1_FILES`: simple_python,
multiple, parallel, irrelevance) becomes a demonstration in the SAME tool-call dialect as the domain: the gold
calls (`gold_calls`: each parameter's first allowed value) scripted one per turn, then a short closing message
(for irrelevance rows: a message saying no function fits, and no call), played through `EnvAgent` over the
`bfcl` env, kept only when BFCL's AST check gives reward 1.
CAUTION: these rows are BFCL's EVALUATION items (there is no BFCL train split): a model trained on stage 1 must
not be evaluated on those BFCL files (`agentic eval run --task bfcl*`, the `bfcl*` envs); each stage-1
trajectory carries `metadata["bfcl_eval_item"] = True` and the stats say so.
Stage 2 (the domain): the synthesized tasks' demos plus the 500 retail TRAIN tasks' gold actions as demos
(`synth.envtasks.demos`); retail dev tasks are refused (`synth.envtasks.run.check_training_file`).
Not covered: BFCL multi-turn (its stateful APIs are not simulated), mixing ratios (the trainer's choice).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.envs.bfcl import gold_calls, openai_tools
from agentic_infer.runner import iter_jsonl
from synth.demos import DemoResult, Vocab, write_demos
from synth.envtasks.demos import build_env_demos, collect, play_script, tool_call_text

STAGE1_FILES = ("BFCL_v4_simple_python.json", "BFCL_v4_multiple.json", "BFCL_v4_parallel.json",
                "BFCL_v4_irrelevance.json")
NO_FIT = "None of the available functions can be used for this request, so I make no call."
CLOSING = "I made the function call(s) your request needs."


def bfcl_rows(files: Sequence[str | Path] | None = None, *, limit: int | None = None) -> list[dict[str, Any]]:
    """BFCL rows with their `ground_truth` (from `possible_answer/<same name>`; irrelevance rows have none)."""
    from agentic_infer.tools.retrieval.recipes import shared_data_dir

    paths = [Path(f) for f in files] if files else [shared_data_dir() / "tools" / "bfcl" / f for f in STAGE1_FILES]
    rows = []
    for path in paths:
        answers_file = path.parent / "possible_answer" / path.name
        gold = {r["id"]: r["ground_truth"] for _, r in iter_jsonl(answers_file)} if answers_file.is_file() else {}
        taken = 0
        for _, row in iter_jsonl(path, "BFCL v4 rows {id, question, function}"):
            if "irrelevance" not in path.name and row["id"] not in gold:
                continue
            rows.append({**row, "ground_truth": gold.get(row["id"], [])})
            taken += 1
            if limit and taken >= limit:
                break
    return rows


def stage1_script(row: Mapping[str, Any], *, dialect: str = "tool_calls") -> list[str]:
    """The gold calls one per turn (names as the env's tools spell them), then the closing message."""
    names = {f["name"]: t["function"]["name"] for f, t in zip(row["function"], openai_tools(row["function"]))}
    calls = gold_calls(row["ground_truth"], functions=row["function"])
    turns = [tool_call_text(names.get(fn, fn), args, dialect) for fn, args in calls]
    return turns + [CLOSING if calls else NO_FIT]


def stage1_demos(vocab: Vocab, *, files: Sequence[str | Path] | None = None, limit: int | None = None,
                 dialect: str = "tool_calls") -> DemoResult:
    """Stage 1: BFCL's gold calls as verified demonstrations (see the module docstring: BFCL eval items)."""
    t0 = time.perf_counter()
    rows = bfcl_rows(files, limit=limit)

    async def go() -> list[Any]:
        built = []
        for row in rows:
            turns = stage1_script(row, dialect=dialect)
            traj, reason = await play_script(row, turns, vocab, env="bfcl", calls=len(turns) - 1, dialect=dialect,
                                             info={"stage": 1})
            traj.metadata["bfcl_eval_item"] = True
            built.append((traj, reason))
        return built

    result = collect(asyncio.run(go()), step="stage1", env="bfcl", vocab=vocab, wall=time.perf_counter() - t0,
                     dialect=dialect)
    result.stats["bfcl_eval_items"] = ("these are BFCL's evaluation items: do not evaluate a model trained on them "
                                       "on BFCL's files")
    return result


def stage2_demos(vocab: Vocab, *, synth_rows: Sequence[Mapping[str, Any]] = (), train_file: str | Path | None = None,
                 limit: int | None = None, dialect: str = "tool_calls") -> DemoResult:
    """Stage 2: demonstrations of the synthesized rows plus the train file's gold actions (dev files refused)."""
    from synth.envtasks.run import read_task_rows

    rows = list(synth_rows) + (read_task_rows(train_file, limit=limit) if train_file else [])
    result = build_env_demos(rows, vocab, dialect=dialect)
    result.stats["step"] = "stage2"
    for t in result.trajectories:
        t.metadata["demo"]["stage"] = 2
    return result


def write_stages(out: str | Path, stage1: DemoResult | None, stage2: DemoResult | None) -> dict[str, Any]:
    """`out/stage1/` and `out/stage2/` (trajectories.jsonl + stats.json each, replaced); returns both stats."""
    out = Path(out)
    stats = {}
    for name, result in (("stage1", stage1), ("stage2", stage2)):
        if result is not None:
            write_demos(out / name, result, overwrite=True)
            stats[name] = result.stats
    (out / "stages.json").write_text(json.dumps(stats, indent=2, default=str), encoding="utf-8")
    return stats


__all__ = ["CLOSING", "NO_FIT", "STAGE1_FILES", "bfcl_rows", "stage1_demos", "stage1_script", "stage2_demos",
           "write_stages"]
