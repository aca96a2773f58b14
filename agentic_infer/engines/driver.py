"""Running an agent over many examples: schedulers, progress, resumable output.

Schedulers:
- `lockstep` (the Search-o1 reference): every unfinished episode advances one turn per step; the
  step waits for its slowest member, and handlers see the whole batch at once.
- `async`: each episode proceeds on its own, at most `concurrency` at a time, so a
  continuous-batching server stays full.
- `sequential`: one episode at a time (a baseline).
For a deterministic backend all three give identical trajectories: a turn's work depends only on
its own episode.

With `out=PATH`, finished trajectories are appended to a JSONL file as they finish (flushed), and
a rerun skips examples already there, so a crash loses at most the episodes in flight.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.engines.loop import AgentLoop, Episode
from agentic_infer.errors import ConfigError
from agentic_infer.types import Trajectory

log = logging.getLogger(__name__)
SCHEDULERS = ("async", "lockstep", "sequential")


def example_id(example: dict[str, Any]) -> str:
    """The example's own id (`id`, `_id`, `qid`), else a hash of its question."""
    for key in ("id", "_id", "qid"):
        if example.get(key) is not None:
            return str(example[key])
    blob = json.dumps(example.get("question", example), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def _load_done(path: Path) -> dict[str, Trajectory]:
    done: dict[str, Trajectory] = {}
    if not path.exists():
        return done
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                traj = Trajectory.from_json(line)
            except (json.JSONDecodeError, KeyError) as e:  # a torn last line from a crash
                log.warning("%s:%d unreadable (%s); that example will be rerun", path, n, e)
                continue
            done[traj.metadata.get("example_id") or example_id(traj.example)] = traj
    return done


class _Progress:
    def __init__(self, total: int, enabled: bool, label: str):
        self.bar = None
        if enabled and total > 1:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), transient=False)
            self.task = self.bar.add_task(label, total=total)
            self.bar.start()

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


async def run_many(loop: AgentLoop, make_episode: Callable[[dict[str, Any]], Episode],
                   examples: Sequence[dict[str, Any]], *, scheduler: str = "async", concurrency: int = 8,
                   out: str | Path | None = None, progress: bool = True) -> list[Trajectory]:
    """Run `examples` through `loop`; trajectories come back in the order of `examples`."""
    if scheduler not in SCHEDULERS:
        raise ConfigError(f"scheduler={scheduler!r}: choose one of {SCHEDULERS}")
    if concurrency < 1:
        raise ConfigError(f"concurrency={concurrency}: must be >= 1")
    ids = [example_id(ex) for ex in examples]
    path = Path(out) if out is not None else None
    done = _load_done(path) if path else {}
    todo = [(i, ex) for i, (ex, eid) in enumerate(zip(examples, ids)) if eid not in done]
    results: dict[int, Trajectory] = {i: done[eid] for i, eid in enumerate(ids) if eid in done}
    bar = _Progress(len(examples), progress, loop.engine)
    bar.advance(len(results))
    sink = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (closed in finally)
    if sink is not None and path.stat().st_size and not path.read_bytes().endswith(b"\n"):
        sink.write("\n")  # end a line torn by a crash, so the next record starts clean

    def finish(i: int, ep: Episode) -> None:
        ep.trajectory.metadata["example_id"] = ids[i]
        results[i] = ep.trajectory
        if sink is not None:
            sink.write(ep.trajectory.to_json() + "\n")
            sink.flush()
        bar.advance()

    try:
        if scheduler == "lockstep":
            for start in range(0, len(todo), concurrency):  # a batch of `concurrency` episodes
                batch = [(i, make_episode(ex)) for i, ex in todo[start:start + concurrency]]
                while any(not ep.done for _, ep in batch):
                    await loop.step([ep for _, ep in batch])
                    for i, ep in batch:
                        if ep.done and i not in results:
                            finish(i, ep)
        else:
            limit = asyncio.Semaphore(1 if scheduler == "sequential" else concurrency)

            async def one(i: int, ex: dict[str, Any]) -> None:
                async with limit:
                    ep = make_episode(ex)
                    while not ep.done:
                        await loop.step([ep])
                    finish(i, ep)

            await asyncio.gather(*(one(i, ex) for i, ex in todo))
    finally:
        bar.close()
        if sink is not None:
            sink.close()
    return [results[i] for i in range(len(examples))]
