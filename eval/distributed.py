"""An eval run's items over an executor (local processes, Ray, Slurm): shards generate, the driver merges.

`eval.runner.run_eval` hands over here when `executor.kind` is not local or `executor.tasks` > 1:

    agentic eval run --task hotpotqa --data FILE --engine search-o1 --corpus per-question --out DIR \\
        --executor ray --tasks 8 --workers 4            # or --executor slurm, or local with --workers N

The items without a row in DIR/results.jsonl are split into `tasks` shards (rank r takes every tasks-th item),
each a datatrove task that loads the backend itself and runs `eval.runner.generate` into
DIR/shards/<plan>/<rank>/ (its own rollouts.jsonl and results.jsonl, resumable like any run). When every shard
has finished, their rollouts and rows join DIR/rollouts.jsonl and DIR/results.jsonl (rewritten atomically, in
the examples' order, one per id), and the run goes on as a local one (judge, summary.json). <plan> hashes the
shard plan (the pending ids and the task count): a rerun of a killed run finds the shards that finished
(datatrove's completion markers, DIR/shards/<plan>/logs/) and the others resume from their own files, so no
item is generated twice.

Not covered: a judge on the executor (the judging phase runs in the driver, after the merge).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

from datatrove.pipeline.base import PipelineStep

from agentic_infer.executors import run_steps
from agentic_infer.runner import iter_jsonl, repair_jsonl, write_jsonl


class EvalShard(PipelineStep):
    """One shard of an eval run: rank r of W generates the pending ids r, r+W, ... into FOLDER/<rank>/."""

    name = "eval shard"
    type = "🧪 - EVAL"

    def __init__(self, cfg: Any, ids: list[str], folder: str):
        super().__init__()
        self.cfg, self.ids, self.folder = cfg, list(ids), folder

    def run(self, data: Any = None, rank: int = 0, world_size: int = 1) -> Any:
        from agentic_infer.backends import load_llm
        from agentic_infer.tasks import get_task
        from eval.runner import backoff_predictions, generate

        mine = set(self.ids[rank::world_size])
        if mine:
            cfg = self.cfg
            task = get_task(cfg.task)
            examples = task.load(Path(cfg.data).expanduser(), limit=cfg.limit, fields=cfg.fields)
            out = Path(self.folder) / f"{rank:05d}"
            out.mkdir(parents=True, exist_ok=True)
            with self.track_time():
                asyncio.run(generate(cfg, task, examples, out, llm=load_llm(cfg.backend),
                                     direct=backoff_predictions(cfg), progress=False, ids=mine))
            self.stat_update("items", value=len(mine))
        yield from data or ()


def shard_plan(ids: list[str], tasks: int) -> str:
    """The key of a shard plan: which ids are pending and how many shards split them."""
    return hashlib.sha1(json.dumps([tasks, ids]).encode()).hexdigest()[:12]


def _lines_by_id(path: Path, key: str) -> dict[str, str]:
    out: dict[str, str] = {}
    if not path.exists():
        return out
    repair_jsonl(path)
    for _, rec in iter_jsonl(path, "one record a line", skip_bad=True):
        out.setdefault(str(rec[key]), json.dumps(rec, ensure_ascii=False, default=str))
    return out


def run_sharded(cfg: Any, examples: list[dict[str, Any]], out: Path) -> None:
    """Generate the pending items of `examples` on `cfg.executor`, then merge the shards into `out`."""
    rollouts_path, results_path = out / "rollouts.jsonl", out / "results.jsonl"
    rows = _lines_by_id(results_path, "id")
    pending = [str(ex["id"]) for ex in examples if str(ex["id"]) not in rows]
    if not pending:
        return
    ex = cfg.executor
    folder = out / "shards" / shard_plan(pending, ex.tasks)
    run_steps([EvalShard(cfg, pending, str(folder))], ex, logging_dir=folder / "logs", job_name=f"eval-{cfg.task}")
    rollouts = _lines_by_id(rollouts_path, "example_id")
    for rank in range(ex.tasks):
        shard = folder / f"{rank:05d}"
        for k, v in _lines_by_id(shard / "rollouts.jsonl", "example_id").items():
            rollouts.setdefault(k, v)
        for k, v in _lines_by_id(shard / "results.jsonl", "id").items():
            rows.setdefault(k, v)
    order = {str(e["id"]): i for i, e in enumerate(examples)}
    last = len(order)
    write_jsonl(rollouts_path, [v for _, v in sorted(rollouts.items(), key=lambda kv: order.get(kv[0], last))])
    write_jsonl(results_path, [v for _, v in sorted(rows.items(), key=lambda kv: order.get(kv[0], last))])


__all__ = ["EvalShard", "run_sharded", "shard_plan"]
