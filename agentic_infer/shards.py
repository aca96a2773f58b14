"""A command's items split over an executor: each rank works on its share into its own folder, the driver merges.

    folder = out / "shards" / plan_key(pending_ids, cfg.tasks)
    dirs = run_shards(partial(work, ...), cfg, folder, job_name="synth-demos")   # work(rank, world, shard_dir)
    write_jsonl(out / "trajectories.jsonl", concat_lines(d / "trajectories.jsonl" for d in dirs))

The one mechanism behind every sharded command (`agentic eval run`, `agentic synth demos|coa|fuzzqa --executor`):
`run_shards` runs one `ShardStep` over `cfg.tasks` ranks through `agentic_infer.executors.run_steps` (local
processes, Ray or Slurm), so a finished rank leaves datatrove's completion marker under `folder/logs/` and a rerun
of a killed run redoes only the unfinished ranks. `work` must be picklable (a module-level function or a
`functools.partial` of one: Ray and Slurm ship it to other processes) and writes only inside its `shard_dir`;
each rank works in the driver's working directory (on a cluster: a shared filesystem), with it on `sys.path`,
so relative paths and the driver's own modules hold;
the caller merges the shards' files (`concat_lines`, `sum_stats`). `plan_key` names the plan (the pending items
and the task count), so a rerun with other pending items or another task count starts a fresh plan.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from datatrove.pipeline.base import PipelineStep

from agentic_infer.executors import ExecutorConfig, run_steps
from agentic_infer.runner import iter_jsonl, repair_jsonl

Work = Callable[[int, int, Path], int | None]  # (rank, world size, shard dir) -> items done


class ShardStep(PipelineStep):
    """One rank of a sharded command: calls `work(rank, world_size, folder/<rank>)` and counts its items."""

    name = "shard"
    type = "🧩 - SHARD"

    def __init__(self, work: Work, folder: str):
        super().__init__()
        self.work, self.folder, self.cwd = work, folder, os.getcwd()

    def run(self, data: Any = None, rank: int = 0, world_size: int = 1) -> Any:
        if Path(self.cwd).is_dir():  # the driver's working directory, importable as under `python -m`: relative
            os.chdir(self.cwd)  # paths and the modules a URI names (fake://?script=) mean the same on every rank
            if self.cwd not in sys.path:
                sys.path.insert(0, self.cwd)
        out = shard_dir(Path(self.folder), rank)
        out.mkdir(parents=True, exist_ok=True)
        with self.track_time():
            n = self.work(rank, world_size, out)
        self.stat_update("items", value=int(n or 0))
        yield from data or ()


def shard_dir(folder: Path, rank: int) -> Path:
    return Path(folder) / f"{rank:05d}"


def plan_key(*parts: Any) -> str:
    """A short key of a shard plan (e.g. the pending ids and the task count)."""
    return hashlib.sha1(json.dumps(parts, default=str).encode()).hexdigest()[:12]


def block(n: int, rank: int, world: int) -> range:
    """Rank `rank`'s contiguous share of `n` items (sizes differ by at most one); the blocks in rank order are
    the items in order, so concatenated shard outputs keep the one-process order."""
    return range(rank * n // world, (rank + 1) * n // world)


def run_shards(work: Work, cfg: ExecutorConfig, folder: Path, *, job_name: str) -> list[Path]:
    """Run `work` on each of `cfg.tasks` ranks on `cfg.kind`; returns the shard folders in rank order (raises
    `ExecutorError` when a rank did not finish: rerunning resumes it)."""
    folder = Path(folder).resolve()
    run_steps([ShardStep(work, str(folder))], cfg, logging_dir=folder / "logs", job_name=job_name)
    return [shard_dir(folder, r) for r in range(cfg.tasks)]


def concat_lines(paths: Iterable[Path]) -> Iterable[str]:
    """The records of our JSONL files (missing ones skipped, a torn last line dropped), re-encoded one a line."""
    for path in paths:
        if Path(path).exists():
            repair_jsonl(path)
            for _, rec in iter_jsonl(path, skip_bad=True):
                yield json.dumps(rec, ensure_ascii=False, default=str)


def sum_stats(parts: list[dict[str, Any]], *, same: Iterable[str] = ()) -> dict[str, Any]:
    """The shards' stats as one: numbers summed, nested dicts merged key by key the same way; the top-level keys in
    `same` (settings every shard shares, e.g. `options`) and anything not a number (names) taken from the first
    shard that has it. Rates and wall times are the caller's to recompute."""
    same = set(same)
    out: dict[str, Any] = {}
    for part in parts:
        for k, v in part.items():
            if k not in out or out[k] is None:
                out[k] = sum_stats([v]) if isinstance(v, dict) and k not in same else v
            elif k in same:
                continue
            elif isinstance(v, dict) and isinstance(out[k], dict):
                out[k] = sum_stats([out[k], v])
            elif _number(v) and _number(out[k]):
                out[k] += v
    return out


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


__all__ = ["ShardStep", "block", "concat_lines", "plan_key", "run_shards", "shard_dir", "sum_stats"]
