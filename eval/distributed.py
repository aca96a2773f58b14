"""An eval run's items over an executor (local processes, Ray, Slurm): shards generate, the driver merges.

`eval.runner.run_eval` hands over here when `executor.kind` is not local or `executor.tasks` > 1:

    agentic eval run --task hotpotqa --data FILE --engine search-o1 --corpus per-question --out DIR \\
        --executor ray --tasks 8 --workers 4            # or --executor slurm, or local with --workers N

The items without a row in DIR/results.jsonl are split into `tasks` shards (rank r takes every tasks-th item),
each a rank of `agentic_infer.shards.run_shards` that loads the backend itself and runs `eval.runner.generate` into
DIR/shards/<plan>/<rank>/ (its own rollouts.jsonl and results.jsonl, resumable like any run). When every shard
has finished, their rollouts and rows join DIR/rollouts.jsonl and DIR/results.jsonl (rewritten atomically, in
the examples' order, one per id) and their error records DIR/rollouts.jsonl.errors.jsonl (what `eval compare`
reports as the reasons for unscored items), and the run goes on as a local one (judge, summary.json). <plan> hashes the
shard plan (the pending ids and the task count): a rerun of a killed run finds the shards that finished
(datatrove's completion markers, DIR/shards/<plan>/logs/) and the others resume from their own files, so no
item is generated twice.

Not covered: a judge on the executor (the judging phase runs in the driver, after the merge).
"""

from __future__ import annotations

import asyncio
import json
from functools import partial
from pathlib import Path
from typing import Any

from agentic_infer.runner import iter_jsonl, repair_jsonl, write_jsonl
from agentic_infer.shards import plan_key, run_shards


def generate_shard(cfg: Any, ids: list[str], rank: int, world: int, out: Path) -> int:
    """Rank r of W generates the pending ids r, r+W, ... into `out` (its shard folder; resumable like any run)."""
    from agentic_infer.backends import load_llm
    from agentic_infer.tasks import get_task
    from eval.runner import backoff_predictions, generate

    mine = set(ids[rank::world])
    if mine:
        task = get_task(cfg.task)
        examples = task.load(Path(cfg.data).expanduser(), limit=cfg.limit, fields=cfg.fields)
        asyncio.run(generate(cfg, task, examples, out, llm=load_llm(cfg.backend), direct=backoff_predictions(cfg),
                             progress=False, ids=mine))
    return len(mine)


def run_sharded(cfg: Any, examples: list[dict[str, Any]], out: Path) -> None:
    """Generate the pending items of `examples` on `cfg.executor`, then merge the shards into `out`."""
    rollouts_path, results_path = out / "rollouts.jsonl", out / "results.jsonl"
    rows = _lines_by_id(results_path, "id")
    pending = [str(ex["id"]) for ex in examples if str(ex["id"]) not in rows]
    if not pending:
        return
    folder = out / "shards" / plan_key(cfg.executor.tasks, pending)
    shards = run_shards(partial(generate_shard, cfg, pending), cfg.executor, folder, job_name=f"eval-{cfg.task}")
    rollouts = _lines_by_id(rollouts_path, "example_id")
    for shard in shards:
        for k, v in _lines_by_id(shard / "rollouts.jsonl", "example_id").items():
            rollouts.setdefault(k, v)
        for k, v in _lines_by_id(shard / "results.jsonl", "id").items():
            rows.setdefault(k, v)
    order = {str(e["id"]): i for i, e in enumerate(examples)}
    last = len(order)
    write_jsonl(rollouts_path, [v for _, v in sorted(rollouts.items(), key=lambda kv: order.get(kv[0], last))])
    write_jsonl(results_path, [v for _, v in sorted(rows.items(), key=lambda kv: order.get(kv[0], last))])
    errors_path = out / "rollouts.jsonl.errors.jsonl"  # the items that failed, as a one-process run records them
    errors = dict.fromkeys(_line(rec) for path in [errors_path, *(s / errors_path.name for s in shards)]
                           for rec in _records(path))
    if errors:
        write_jsonl(errors_path, list(errors))


def _records(path: Path) -> list[dict[str, Any]]:
    """A JSONL file's records, a torn last line repaired ([] when the file does not exist)."""
    if not path.exists():
        return []
    repair_jsonl(path)
    return [rec for _, rec in iter_jsonl(path, "one record a line", skip_bad=True)]


def _line(rec: dict[str, Any]) -> str:
    return json.dumps(rec, ensure_ascii=False, default=str)


def _lines_by_id(path: Path, key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for rec in _records(path):
        out.setdefault(str(rec[key]), _line(rec))
    return out


__all__ = ["generate_shard", "run_sharded"]
