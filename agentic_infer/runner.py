"""`run_many`: any engine over many examples, with bounded concurrency, progress and resumable output.

    rollouts = await run_many(engine, examples, concurrency=8, out="runs/x/rollouts.jsonl")

With `out=PATH`, each finished Rollout is appended to a JSONL file as one line (flushed) as soon as it
finishes, and a rerun skips the examples already there: a killed run loses at most the items in
flight and never writes one twice. A line torn by a kill is dropped when the file is reopened (the file
is rewritten through a temporary file and `os.replace`), so the next record starts clean.
An engine failure (`AgenticError`) does not stop the run: it is logged, appended to
`PATH.errors.jsonl` (or raised when `out` is None and `raise_errors`), and the example is retried
on the next run; its slot in the returned list is None.

Schedulers: `async` (each example on its own, at most `concurrency` at once, so a continuous-batching
server stays full), `sequential` (one at a time, a baseline) and, for engines on the agent loop
(`EpisodicEngine`), `lockstep` (the Search-o1 reference: a batch of `concurrency` episodes advances one
turn per step, waiting for its slowest member, and tool handlers see the whole batch at once). For a
deterministic backend all three give identical rollouts. `prepare(index, rollout)` runs just before a
rollout is written (eval writes its verdicts into `rollout.rewards` there, so the line holds them) and
`on_rollout(index, rollout)` just after (eval writes its result row there). `write_jsonl` replaces a
whole JSONL file atomically (eval's judging phase adds verdicts to finished rollouts with it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from agentic_infer.engines.base import Engine, EpisodicEngine, example_id
from agentic_infer.errors import AgenticError, ConfigError
from agentic_infer.types import Rollout

log = logging.getLogger(__name__)
SCHEDULERS = ("async", "lockstep", "sequential")


def read_jsonl(path: Path, parse: Callable[[str], Any] = json.loads) -> list[Any]:
    """Every readable record of a JSONL file; a torn or unreadable line is logged and skipped."""
    out: list[Any] = []
    if not path.exists():
        return out
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                out.append(parse(line))
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                log.warning("%s:%d unreadable (%s); skipped", path, n, e)
    return out


def iter_jsonl(path: Path, expected: str) -> Iterator[tuple[int, Any]]:
    """(line number, record) of every non-empty line of a user's input file; a line that is not JSON is a
    `ConfigError` naming the file, the line and what was `expected` (inputs are not repaired, only outputs)."""
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as e:
                raise ConfigError(f"{path}:{n}: not JSON ({e.msg}); expected {expected}") from None


def write_jsonl(path: Path, lines: Iterable[str]) -> None:
    """Replace `path` with `lines` (one JSON record each) atomically: a kill leaves the old file or the new one."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def repair_jsonl(path: Path) -> None:
    """Drop a torn last line (a kill mid-write) by rewriting the file atomically; a no-op for a clean file."""
    if not path.exists() or not path.stat().st_size:
        return
    data = path.read_bytes()
    if data.endswith(b"\n"):
        return
    keep = data[: data.rfind(b"\n") + 1]
    log.warning("%s: dropping a torn last line (%d bytes)", path, len(data) - len(keep))
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(keep)
    os.replace(tmp, path)


class Progress:
    """A rich progress bar (no-op when disabled): `advance()`, `close()`."""

    def __init__(self, total: int, *, done: int = 0, label: str = "", enabled: bool = True):
        self.bar = None
        if enabled and total > 0:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress("[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), TimeRemainingColumn())
            self.task = self.bar.add_task(label, total=total, completed=done)
            self.bar.start()

    def advance(self, n: int = 1) -> None:
        if self.bar is not None:
            self.bar.advance(self.task, n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def load_rollouts(path: str | Path) -> dict[str, Rollout]:
    """Finished rollouts of a run file by example id (the first record wins)."""
    done: dict[str, Rollout] = {}
    for r in read_jsonl(Path(path), Rollout.from_json):
        done.setdefault(r.example_id, r)
    return done


async def run_many(engine: Engine, examples: Sequence[Mapping[str, Any]], *, concurrency: int = 8,
                   out: str | Path | None = None, progress: bool = True, scheduler: str = "async",
                   on_rollout: Callable[[int, Rollout], None] | None = None,
                   prepare: Callable[[int, Rollout], None] | None = None,
                   raise_errors: bool | None = None) -> list[Rollout | None]:
    """Run `examples` through `engine`; rollouts come back in the order of `examples` (see module docstring)."""
    if scheduler not in SCHEDULERS:
        raise ConfigError(f"scheduler={scheduler!r}: choose one of {SCHEDULERS}")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(f"concurrency={concurrency!r}: must be an integer >= 1")
    if scheduler == "lockstep" and not isinstance(engine, EpisodicEngine):
        raise ConfigError(f"scheduler='lockstep' needs an engine on the agent loop; {engine.name!r} is not; "
                          "use scheduler='async'")
    raise_errors = out is None if raise_errors is None else raise_errors
    ids = [example_id(ex) for ex in examples]
    path = Path(out) if out is not None else None
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        repair_jsonl(path)
    done = load_rollouts(path) if path else {}
    results: list[Rollout | None] = [done.get(eid) for eid in ids]
    todo = [i for i, r in enumerate(results) if r is None]
    bar = Progress(len(examples), done=len(examples) - len(todo), label=engine.name, enabled=progress)
    sink = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115 (closed in finally)
    errors = path.with_suffix(path.suffix + ".errors.jsonl") if path else None

    def finish(i: int, rollout: Rollout) -> None:
        rollout.example_id = ids[i]
        for t in rollout.trajectories:
            t.group_id = ids[i]
        results[i] = rollout
        if prepare is not None:
            prepare(i, rollout)
        if sink is not None:
            sink.write(rollout.to_json() + "\n")
            sink.flush()
        if on_rollout is not None:
            on_rollout(i, rollout)
        bar.advance()

    def failed(i: int, e: AgenticError) -> None:
        if raise_errors:
            raise e
        log.warning("%s %s: %s (retried on the next run)", engine.name, ids[i], e)
        if errors is not None:
            with open(errors, "a", encoding="utf-8") as f:
                f.write(json.dumps({"id": ids[i], "error": f"{type(e).__name__}: {e}"}) + "\n")
        bar.advance()

    try:
        if scheduler == "lockstep":
            await _lockstep(engine, examples, todo, concurrency, finish, failed)  # type: ignore[arg-type]
        else:
            limit = asyncio.Semaphore(1 if scheduler == "sequential" else concurrency)

            async def one(i: int) -> None:
                async with limit:
                    try:
                        rollout = await engine.run(examples[i])
                    except AgenticError as e:
                        failed(i, e)
                        return
                    finish(i, rollout)

            tasks = [asyncio.ensure_future(one(i)) for i in todo]
            try:
                await asyncio.gather(*tasks)
            except BaseException:  # stop the items in flight before the file closes; they are redone next run
                for t in tasks:
                    t.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
    finally:
        bar.close()
        if sink is not None:
            sink.close()
    return results


async def _lockstep(engine: EpisodicEngine, examples: Sequence[Mapping[str, Any]], todo: list[int],
                    concurrency: int, finish: Callable[[int, Rollout], None],
                    failed: Callable[[int, AgenticError], None]) -> None:
    for start in range(0, len(todo), concurrency):  # a batch of `concurrency` episodes
        batch = []
        for i in todo[start:start + concurrency]:
            try:
                batch.append((i, engine.start(examples[i])))
            except AgenticError as e:
                failed(i, e)
        finished: set[int] = set()
        while any(not ep.done for _, ep in batch):
            await engine.loop.step([ep for _, ep in batch])
            for i, ep in batch:
                if ep.done and i not in finished:
                    finished.add(i)
                    finish(i, engine.rollout(ep))
        for i, ep in batch:  # episodes finished at start (none today) still get written
            if i not in finished:
                finish(i, engine.rollout(ep))
